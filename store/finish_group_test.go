package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/internal/dbtest"
	"github.com/paygate/paygate/store"
)

// approval is the plain approval of charge c, with one attempt that started just after it.
func approval(c charge.Charge) charge.FinishParams {
	c.Status, c.ProcessorRef = charge.StatusSucceeded, "pi_"+c.ID
	return charge.FinishParams{MerchantID: c.MerchantID, Key: c.IdempotencyKey, Charge: &c, Reason: "approved",
		ResponseStatus: 200, ResponseBody: []byte(`{"status":"succeeded"}`), Card: &charge.CardOutcome{Outcome: decline.Approved},
		Attempts: []charge.Attempt{{N: 1, StartedAt: c.CreatedAt.Add(2 * time.Millisecond), DurationMS: 3, TimeoutMS: 4000,
			Class: "success", HTTPStatus: 200}}}
}

// createdCharge writes a new processing charge of merchant's on card fp under key, committed.
func createdCharge(t *testing.T, db *store.DB, merchant, key, fp string) charge.Charge {
	t.Helper()
	cr := groupCreation(merchant, key, fp, "")
	at, err := db.Create(context.Background(), cr)
	if err != nil {
		t.Fatalf("create %s: %v", key, err)
	}
	c := *cr.Charge
	c.CreatedAt = at
	return c
}

// finishGrouped finishes ps as one group: the running approval statement is held by the
// finish of blocker, whose row the test holds locked, every other finish waits, and then the
// row is released. It returns each finish's error.
func finishGrouped(t *testing.T, db *store.DB, blocker charge.Charge, ps []charge.FinishParams) []error {
	t.Helper()
	ctx := context.Background()
	pool := dbtest.Pool(t)
	hold, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = hold.Rollback(ctx) }()
	var holder int
	if err := hold.QueryRow(ctx, `SELECT pg_backend_pid() FROM charges WHERE id = $1 FOR UPDATE`, blocker.ID).Scan(&holder); err != nil {
		t.Fatal(err)
	}
	blocked := make(chan error, 1)
	go func() { blocked <- db.FinishCharge(ctx, approval(blocker)) }()
	until(t, "the running approval waits for the held row", func() bool {
		var waits bool
		err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid)))`,
			holder).Scan(&waits)
		return err == nil && waits
	})
	return whileHeld(t, len(ps), db.WaitingFinishes, func(i int) error { return db.FinishCharge(ctx, ps[i]) }, func() {
		if err := hold.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-blocked; err != nil {
			t.Fatalf("the blocking finish: %v", err)
		}
	})
}

// Plain approvals that wait while an approval statement runs are stored together, by one statement
// in one transaction, and each charge's row reads as a lone approval's does. A charge whose
// card state folded its attempt is left to the general statement, which stores the same
// outcome and marks that state stale.
func TestWaitingApprovalsAreStoredTogether(t *testing.T) {
	ctx := context.Background()
	pool, db, merchant := groupingStore(t, "m-fgroup-")
	lone := createdCharge(t, db, merchant, "k-lone", "fp_f0_"+merchant)
	if err := db.FinishCharge(ctx, approval(lone)); err != nil {
		t.Fatalf("a lone approval: %v", err)
	}
	blocker := createdCharge(t, db, merchant, "k-blocker", "fp_fb_"+merchant)
	var members []charge.Charge
	for i, key := range []string{"k-1", "k-2", "k-3", "k-folded"} {
		members = append(members, createdCharge(t, db, merchant, key, "fp_f"+string(rune('1'+i))+"_"+merchant))
	}
	folded := members[3]
	if _, err := pool.Exec(ctx, `INSERT INTO card_states (processor_account, fingerprint, through_at, through_charge, stale)
		SELECT processor_account, card_fingerprint, card_at, id, false FROM charges WHERE id = $1`, folded.ID); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = pool.Exec(context.Background(), `DELETE FROM card_states WHERE fingerprint = $1`, folded.Card.Fingerprint)
	})
	var ps []charge.FinishParams
	for _, c := range members {
		ps = append(ps, approval(c))
	}
	for i, err := range finishGrouped(t, db, blocker, ps) {
		if err != nil {
			t.Errorf("finish %d (%s): %v", i, members[i].IdempotencyKey, err)
		}
	}

	// Each row, relative to its creation, beside the lone approval's.
	rows, err := pool.Query(ctx, `SELECT c.idempotency_key, c.xmin::text, (to_jsonb(c) - '{id,idempotency_key,card_fingerprint,
			created_at,card_at,updated_at,first_sent_at,finalized_at,outcome_at,card_settled_at,processor_ref}'::text[])
			|| jsonb_build_object('first_sent', first_sent_at - created_at, 'settled', finalized_at IS NOT NULL
				AND outcome_at IS NOT NULL AND card_settled_at IS NOT NULL, 'ref', processor_ref = 'pi_' || id)::text,
			(SELECT s.stale FROM card_states s WHERE s.processor_account = c.processor_account AND s.fingerprint = c.card_fingerprint)
		FROM charges c WHERE c.merchant_id = $1 AND c.idempotency_key <> 'k-blocker' ORDER BY c.idempotency_key`, merchant)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Key, Xmin, Row string
		Stale          *bool
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	if err != nil {
		t.Fatal(err)
	}
	byKey := map[string]row{}
	for _, r := range got {
		byKey[r.Key] = r
	}
	want := byKey["k-lone"]
	if want.Row == "" {
		t.Fatalf("rows %+v: the lone approval is missing", got)
	}
	for _, key := range []string{"k-1", "k-2", "k-3", "k-folded"} {
		if g := byKey[key]; g.Row != want.Row {
			t.Errorf("%s wrote\n%s\nwant the lone approval's\n%s", key, g.Row, want.Row)
		}
	}
	if x := byKey["k-1"].Xmin; byKey["k-2"].Xmin != x || byKey["k-3"].Xmin != x {
		t.Errorf("the group's charges were written by transactions %s, %s and %s, want one", x, byKey["k-2"].Xmin, byKey["k-3"].Xmin)
	}
	if byKey["k-folded"].Xmin == byKey["k-1"].Xmin {
		t.Error("the charge whose card state folded its attempt was written by the group's statement, want the general one")
	}
	if s := byKey["k-folded"].Stale; s == nil || !*s {
		t.Errorf("the folded card's state: stale %v, want true", s)
	}
}
