package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/idempotency"
	"github.com/paygate/paygate/internal/dbtest"
	"github.com/paygate/paygate/store"
)

// The hot path's statements are assembled from the parts each charge needs: every variant
// must have a value for each of its arguments and be accepted by PostgreSQL as it is.
func TestStatementVariantsPrepare(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := dbtest.Tx(t)
	prepare := func(t *testing.T, name string, sql string, args []any, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sd, err := tx.Prepare(ctx, name, sql)
		if err != nil {
			t.Fatalf("%s: prepare: %v\n%s", name, err, sql)
		}
		if len(sd.ParamOIDs) != len(args) {
			t.Fatalf("%s: %d parameters, %d arguments", name, len(sd.ParamOIDs), len(args))
		}
	}

	for _, status := range []charge.Status{charge.StatusSucceeded, charge.StatusPending, charge.StatusFailed} {
		for _, attempts := range []int{0, 2} {
			for _, card := range []*charge.CardOutcome{nil, {Outcome: decline.Approved}} {
				c := newCharge("m1", "")
				c.Status = status
				p := charge.FinishParams{MerchantID: "m1", Key: "k", Charge: &c, Card: card,
					Attempts: make([]charge.Attempt, attempts), ResponseStatus: 201, ResponseBody: []byte(`{}`),
					Next: &charge.NextReattempt{ChargeID: "ch_next", At: time.Now()}}
				name := fmt.Sprintf("finish_%s_%d_%t", status, attempts, card != nil)
				sql, args, err := store.FinishStatement(p)
				prepare(t, name, sql, args, err)
			}
		}
	}

	for _, ref := range []string{"", "order-1"} {
		for _, card := range []*charge.Card{nil, testCard} {
			for _, admit := range []bool{false, true} {
				for mode := range store.CreationModes {
					p := charge.BeginParams{MerchantID: "m1", Key: "k", New: newCharge("m1", ref), Card: card,
						LockFor: time.Minute}
					if admit {
						p.Admit = func(decline.History, time.Time) decline.Verdict { return decline.Verdict{Allowed: true} }
					}
					name := fmt.Sprintf("create_%t_%t_%t_%d", ref != "", card != nil, admit, mode)
					sql, args, err := store.CreateStatement(p, mode)
					prepare(t, name, sql, args, err)
				}
			}
		}
	}
}

func TestPositional(t *testing.T) {
	t.Parallel()
	sql, args, err := store.Positional(`SELECT @b::int, @a::int, @b::int`, pgx.NamedArgs{"a": 1, "b": 2, "unused": 3})
	if err != nil || sql != `SELECT $1::int, $2::int, $1::int` || len(args) != 2 || args[0] != 2 || args[1] != 1 {
		t.Fatalf("got %q %v %v, want the arguments numbered in order of appearance", sql, args, err)
	}
	// A second call uses the compiled form with the new values.
	if _, args, _ := store.Positional(`SELECT @b::int, @a::int, @b::int`, pgx.NamedArgs{"a": 5, "b": 6}); args[0] != 6 || args[1] != 5 {
		t.Fatalf("second call: got %v", args)
	}
	if _, _, err := store.Positional(`SELECT @a::int, @missing::int`, pgx.NamedArgs{"a": 1}); err == nil {
		t.Fatal("a statement naming an argument without a value: got no error")
	}
}

// A first phase is one transaction even though it travels as two pipelined batches: when
// its second batch fails, the key its first batch wrote is gone too, and the same key
// starts afresh. Inside a test's transaction the phase is a savepoint; on the pool it is
// BEGIN ... COMMIT.
func TestBeginChargeFailureLeavesNothing(t *testing.T) {
	t.Parallel()
	for name, db := range map[string]*store.DB{"savepoint": dbtest.Store(t), "pool": store.New(dbtest.Pool(t))} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			merchant := "m_rollback_" + charge.NewID()
			// A card of its own: the test transaction keeps the card locks it took.
			card := &charge.Card{Fingerprint: "fp_" + merchant, Network: "visa", ExpMonth: 12, ExpYear: 2034}
			newMerchant(t, db, merchant)
			beginOn := func(key string, fp idempotency.Fingerprint, c charge.Charge) (charge.Begun, error) {
				return db.BeginCharge(ctx, charge.BeginParams{MerchantID: merchant, Key: key, Fingerprint: fp,
					LockFor: time.Minute, New: c, Card: card})
			}
			first, err := beginOn("k1", idempotency.Fingerprint{1}, newCharge(merchant, ""))
			if err != nil || !first.Created {
				t.Fatalf("first charge: %+v, %v", first, err)
			}

			clash := newCharge(merchant, "")
			clash.ID, clash.ProcessorKey = first.Charge.ID, first.Charge.ProcessorKey
			if _, err := beginOn("k2", idempotency.Fingerprint{2}, clash); err == nil {
				t.Fatal("a charge whose id is taken: got no error")
			}

			again, err := beginOn("k2", idempotency.Fingerprint{2}, newCharge(merchant, ""))
			if err != nil || !again.Created || again.Verdict != idempotency.Proceed {
				t.Fatalf("the same key after the failed phase: got %+v, %v; want a new charge", again, err)
			}
		})
	}
}

// Every processor key is unique because it is derived from the charge's id, and the table
// refuses any other key.
func TestProcessorKeyIsDerivedFromTheID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := dbtest.Tx(t)
	db := store.New(tx)
	newMerchant(t, db, "m_key")
	_, err := tx.Exec(ctx, `INSERT INTO charges (id, merchant_id, amount, currency, payment_method, initiator, status, processor_key)
		VALUES ('ch_a', 'm_key', 100, 'usd', 'pm_card_visa', 'customer', 'processing', 'pg_ch_b')`)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.ConstraintName != "charges_processor_key_from_id" {
		t.Fatalf("a processor key that is not pg_ and the id: got %v, want the check to refuse it", err)
	}
}

// A new key on a card whose history holds nothing but approvals is admitted in one round
// trip, on the verdict over an empty history; a card with anything else in its history is
// decided over that history.
func TestBeginChargeCleanAndDirtyCards(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := store.New(dbtest.Pool(t))
	merchant := "m_clean_" + charge.NewID()
	newMerchant(t, db, merchant)
	card := &charge.Card{Fingerprint: "fp_" + merchant, Network: "visa", ExpMonth: 12, ExpYear: 2034}
	beginOn := func(key string) charge.Begun {
		t.Helper()
		b, err := db.BeginCharge(ctx, charge.BeginParams{MerchantID: merchant, Key: key,
			Fingerprint: idempotency.Fingerprint{byte(len(key))}, LockFor: time.Minute, New: newCharge(merchant, ""), Card: card,
			Admit: func(h decline.History, now time.Time) decline.Verdict {
				return decline.Check(h, decline.Next{At: now, Network: decline.Visa}, decline.DefaultCaps())
			}})
		if err != nil || !b.Created {
			t.Fatalf("begin %s: %+v, %v", key, b, err)
		}
		return b
	}
	finish := func(b charge.Begun, status charge.Status, outcome decline.Outcome) {
		t.Helper()
		c := *b.Charge
		c.Status = status
		if err := db.FinishCharge(ctx, charge.FinishParams{MerchantID: merchant, Key: c.IdempotencyKey, Charge: &c,
			ResponseStatus: 201, ResponseBody: []byte(`{}`), Card: &charge.CardOutcome{Outcome: outcome}}); err != nil {
			t.Fatal(err)
		}
	}

	first := beginOn("k-first")
	if first.History != nil || first.Now.IsZero() || !first.Charge.CreatedAt.Equal(first.Now) {
		t.Fatalf("first charge of a card: history %v, now %v, created %v", first.History, first.Now, first.Charge.CreatedAt)
	}
	finish(first, charge.StatusSucceeded, decline.Approved)
	second := beginOn("k-second")
	if second.History != nil {
		t.Fatalf("a card with only approvals: history %v, want none read", second.History)
	}
	// The second charge is still pending: the third is decided over the card's history.
	third := beginOn("k-third")
	if len(third.History) != 2 {
		t.Fatalf("a card with a pending attempt: history of %d attempts, want 2", len(third.History))
	}
	finish(second, charge.StatusDeclined, decline.Declined)
	finish(third, charge.StatusSucceeded, decline.Approved)
	if fourth := beginOn("k-fourth"); len(fourth.History) != 3 {
		t.Fatalf("a card with a decline: history of %d attempts, want 3", len(fourth.History))
	}
	var decisions int
	if err := dbtest.Pool(t).QueryRow(ctx, `SELECT count(*) FROM reattempt_decisions WHERE fingerprint = $1 AND allowed`,
		card.Fingerprint).Scan(&decisions); err != nil || decisions != 4 {
		t.Fatalf("allowed decisions recorded: %d (%v), want 4", decisions, err)
	}
}

// Requests racing with the same new key: one creates the charge, every other finds the key
// in use, and none fails (the one-round-trip path gives way to the long one on the clash).
func TestBeginChargeSameKeyRace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := store.New(dbtest.Pool(t))
	merchant := "m_race_" + charge.NewID()
	newMerchant(t, db, merchant)
	const racers = 8
	type result struct {
		b   charge.Begun
		err error
	}
	results := make(chan result, racers)
	start := make(chan struct{})
	for i := range racers {
		go func() {
			<-start
			// Each racer's card is its own: the card's lock does not serialise them.
			card := &charge.Card{Fingerprint: fmt.Sprintf("fp_%s_%d", merchant, i), Network: "visa", ExpMonth: 12, ExpYear: 2034}
			b, err := db.BeginCharge(ctx, charge.BeginParams{MerchantID: merchant, Key: "same", Fingerprint: idempotency.Fingerprint{7},
				LockFor: time.Minute, New: newCharge(merchant, ""), Card: card,
				Admit: func(h decline.History, now time.Time) decline.Verdict {
					return decline.Check(h, decline.Next{At: now, Network: decline.Visa}, decline.DefaultCaps())
				}})
			results <- result{b, err}
		}()
	}
	close(start)
	created, inUse := 0, 0
	for range racers {
		r := <-results
		switch {
		case r.err != nil:
			t.Errorf("racer failed: %v", r.err)
		case r.b.Created:
			created++
		case r.b.Verdict == idempotency.InUse:
			inUse++
		default:
			t.Errorf("racer: got %+v", r.b)
		}
	}
	if created != 1 || inUse != racers-1 {
		t.Fatalf("got %d created and %d in use, want 1 and %d", created, inUse, racers-1)
	}
}
