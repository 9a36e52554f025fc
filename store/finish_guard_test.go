package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/idempotency"
	"github.com/paygate/paygate/internal/dbtest"
	"github.com/paygate/paygate/store"
)

// A run that stalled past its key's lock may finish after its charge was settled without it
// (by the completer, a retry, reconciliation or an operator). Its outcome then changes
// nothing: not the charge, not the key's stored answer, not the audit trail. A pending charge
// never becomes failed, and takes an approval or a decline.
func TestFinishChargeKeepsASettledOutcome(t *testing.T) {
	t.Parallel()
	tests := []struct {
		settled, late charge.Status
		stored        bool // whether the late outcome is stored
	}{
		{charge.StatusSucceeded, charge.StatusPending, false},
		{charge.StatusSucceeded, charge.StatusDeclined, false},
		{charge.StatusDeclined, charge.StatusSucceeded, false},
		{charge.StatusPending, charge.StatusFailed, false},
		{charge.StatusPending, charge.StatusSucceeded, true},
		{charge.StatusPending, charge.StatusDeclined, true},
		{charge.StatusSucceeded, charge.StatusSucceeded, true},
	}
	for _, tt := range tests {
		t.Run(string(tt.settled)+" then "+string(tt.late), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			tx := dbtest.Tx(t)
			db := store.New(tx)
			newMerchant(t, db, "m1")
			b := begin(t, db, "m1", "k", idempotency.Fingerprint{1}, newCharge("m1", ""))
			finish := func(status charge.Status, body string) error {
				c := *b.Charge
				c.Status = status
				if status == charge.StatusFailed {
					c.Failure = &charge.Failure{Code: "invalid_request"}
				}
				outcome := map[charge.Status]decline.Outcome{charge.StatusSucceeded: decline.Approved,
					charge.StatusDeclined: decline.Declined, charge.StatusPending: decline.Pending}[status]
				p := charge.FinishParams{MerchantID: "m1", Key: "k", Charge: &c, ResponseStatus: 200, ResponseBody: []byte(body),
					Attempts: []charge.Attempt{{StartedAt: time.Now(), Class: "success", HTTPStatus: 200}}}
				if outcome != "" {
					p.Card = &charge.CardOutcome{Outcome: outcome}
				}
				return db.FinishCharge(ctx, p)
			}
			if err := finish(tt.settled, `"settled"`); err != nil {
				t.Fatal(err)
			}
			err := finish(tt.late, `"late"`)
			if tt.stored != (err == nil) || (err != nil && !errors.Is(err, charge.ErrSettled)) {
				t.Fatalf("late finish: %v, want stored %v (or ErrSettled)", err, tt.stored)
			}
			got, err := db.Charge(ctx, "m1", b.Charge.ID)
			if err != nil {
				t.Fatal(err)
			}
			want, attempts, answer := tt.settled, 1, `"settled"`
			if tt.stored {
				want, attempts, answer = tt.late, 2, `"late"`
			}
			if got.Status != want || got.Attempts != attempts {
				t.Fatalf("charge: %s with %d attempts, want %s with %d", got.Status, got.Attempts, want, attempts)
			}
			if r := begin(t, db, "m1", "k", idempotency.Fingerprint{1}, newCharge("m1", "")); string(r.Record.ResponseBody) != answer {
				t.Fatalf("stored answer: %q, want %q", r.Record.ResponseBody, answer)
			}
		})
	}
}

// A charge's first outcome is one plain update of its row, unless a card state folded the
// charge's attempt while it was in flight: that state must learn the attempt changed
// (stale), and the outcome is still stored. The first outcome's event is derived from the
// row either way: the audit trail shows it once.
func TestFinishChargeFirstOutcome(t *testing.T) {
	t.Parallel()
	for _, folded := range []bool{false, true} {
		name := map[bool]string{false: "no card state", true: "a card state folded the attempt"}[folded]
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			tx := dbtest.Tx(t)
			db := store.New(tx)
			newMerchant(t, db, "m1")
			card := &charge.Card{Fingerprint: "fp_first_" + charge.NewID(), Network: "visa"}
			b := beginWith(t, db, "m1", "k", card)
			if folded {
				foldAttempt(t, tx, b.Charge.ID)
			}
			c := *b.Charge
			c.Status = charge.StatusSucceeded
			if err := db.FinishCharge(ctx, charge.FinishParams{MerchantID: "m1", Key: "k", Charge: &c,
				ResponseStatus: 200, ResponseBody: []byte(`{}`), Card: &charge.CardOutcome{Outcome: decline.Approved},
				Attempts: []charge.Attempt{{StartedAt: time.Now(), Class: "success", HTTPStatus: 200}}}); err != nil {
				t.Fatal(err)
			}
			var status, outcome string
			var stale *bool
			var events int
			if err := tx.QueryRow(ctx, `SELECT c.status, c.card_outcome,
					(SELECT s.stale FROM card_states s WHERE s.processor_account = c.processor_account AND s.fingerprint = c.card_fingerprint),
					(SELECT count(*) FROM charge_trail t WHERE t.charge_id = c.id AND t.status_after = 'succeeded')
				FROM charges c WHERE c.id = $1`, c.ID).Scan(&status, &outcome, &stale, &events); err != nil {
				t.Fatal(err)
			}
			if status != "succeeded" || outcome != "approved" || events != 1 {
				t.Fatalf("charge %s, card outcome %s, %d succeeded events; want succeeded, approved, 1", status, outcome, events)
			}
			if folded != (stale != nil && *stale) || (!folded && stale != nil) {
				t.Fatalf("card state stale: %v, want a stale state %v", stale, folded)
			}
		})
	}
}

// The first outcome's plain update writes the row the general statement writes for the same
// outcome: the same charge finished once through each (the general one taken because a card
// state folded its attempt) reads the same, column by column, relative to its creation.
func TestFirstOutcomeWritesWhatTheGeneralStatementWrites(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := dbtest.Tx(t)
	db := store.New(tx)
	newMerchant(t, db, "m1")
	row := func(folded bool) string {
		t.Helper()
		key := map[bool]string{false: "plain", true: "general"}[folded]
		card := &charge.Card{Fingerprint: "fp_" + key + "_" + charge.NewID(), Network: "visa", ExpMonth: 12, ExpYear: 2034}
		c := *beginWith(t, db, "m1", key, card).Charge
		if folded {
			foldAttempt(t, tx, c.ID)
		}
		c.Status, c.ProcessorRef = charge.StatusSucceeded, "pi_1"
		if err := db.FinishCharge(ctx, charge.FinishParams{MerchantID: "m1", Key: key, Charge: &c, Reason: "approved",
			ResponseStatus: 201, ResponseBody: []byte(`{"status":"succeeded"}`), Card: &charge.CardOutcome{Outcome: decline.Approved},
			Attempts: []charge.Attempt{
				{N: 1, StartedAt: c.CreatedAt.Add(time.Millisecond), DurationMS: 3, TimeoutMS: 4000, Class: "transient", HTTPStatus: 503},
				{N: 2, StartedAt: c.CreatedAt.Add(9 * time.Millisecond), DurationMS: 2, TimeoutMS: 4000, Class: "success", HTTPStatus: 200},
			}}); err != nil {
			t.Fatal(err)
		}
		var out string
		if err := tx.QueryRow(ctx, `SELECT (to_jsonb(c) - '{id,idempotency_key,card_fingerprint,created_at,card_at,updated_at,
				first_sent_at,finalized_at,outcome_at,card_settled_at,response_body}'::text[])
				|| jsonb_build_object('first_sent', first_sent_at - created_at, 'settled', finalized_at IS NOT NULL
					AND outcome_at IS NOT NULL AND card_settled_at IS NOT NULL, 'answer', response_body IS NOT NULL)
			FROM charges c WHERE id = $1`, c.ID).Scan(&out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	if plain, general := row(false), row(true); plain != general {
		t.Fatalf("the first outcome's update wrote\n%s\nthe general statement\n%s", plain, general)
	}
}

// foldAttempt writes the state of charge id's card as one that folded the charge's attempt.
func foldAttempt(t *testing.T, tx pgx.Tx, id string) {
	t.Helper()
	if _, err := tx.Exec(context.Background(), `INSERT INTO card_states (processor_account, fingerprint, through_at, through_charge, stale)
		SELECT processor_account, card_fingerprint, card_at, id, false FROM charges WHERE id = $1`, id); err != nil {
		t.Fatal(err)
	}
}
