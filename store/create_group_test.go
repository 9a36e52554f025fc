package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/idempotency"
	"github.com/paygate/paygate/internal/dbtest"
	"github.com/paygate/paygate/store"
)

// groupCreation is a create of a new charge of merchant's on card fp under key.
func groupCreation(merchant, key, fp, ref string) charge.Creation {
	c := newCharge(merchant, ref)
	c.Card, c.Chain, c.Status, c.IdempotencyKey = &charge.Card{Fingerprint: fp, Network: "visa", ExpMonth: 12, ExpYear: 2034},
		c.ID, charge.StatusProcessing, key
	return charge.Creation{Charge: &c, Key: key, Fingerprint: idempotency.Fingerprint{4, 2}, LockFor: time.Minute}
}

// groupingStore returns the shared pool, a store on it that groups its statements (one of each
// kind at a time), and a new merchant of that store whose id starts with prefix.
func groupingStore(t *testing.T, prefix string) (*pgxpool.Pool, *store.DB, string) {
	t.Helper()
	pool := dbtest.Pool(t)
	db := store.NewGrouping(pool, 1)
	t.Cleanup(db.StopGrouping)
	merchant := prefix + charge.NewID()
	newMerchant(t, db, merchant)
	return pool, db, merchant
}

// cardLocked reports whether a transaction waits for the lock of card fp at acct_1.
func cardLocked(t *testing.T, fp string) bool {
	t.Helper()
	var waits bool
	err := dbtest.Pool(t).QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory'
		AND NOT granted AND ((classid::bigint << 32) | objid::bigint) = hashtextextended('acct_1' || '/' || $1, 7263))`, fp).Scan(&waits)
	if err != nil {
		t.Fatal(err)
	}
	return waits
}

// until waits for cond, which another goroutine or the database makes true.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// createGrouped runs creations as one group: the running create statement is held by a create
// on a card whose lock the test holds, every creation waits, and then the lock is released.
// It returns each creation's error.
func createGrouped(t *testing.T, db *store.DB, merchant string, creations []charge.Creation) []error {
	t.Helper()
	ctx := context.Background()
	blockFP := "fp_block_" + merchant
	hold, err := dbtest.Pool(t).Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = hold.Rollback(ctx) }()
	if _, err := hold.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('acct_1' || '/' || $1, 7263))`, blockFP); err != nil {
		t.Fatal(err)
	}
	blocker := make(chan error, 1)
	go func() {
		_, err := db.Create(ctx, groupCreation(merchant, "k-blocker", blockFP, ""))
		blocker <- err
	}()
	until(t, "the running create waits for the held card", func() bool { return cardLocked(t, blockFP) })
	return whileHeld(t, len(creations), db.WaitingCreates, func(i int) error {
		_, err := db.Create(ctx, creations[i])
		return err
	}, func() {
		if err := hold.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-blocker; err != nil {
			t.Fatalf("the blocking create: %v", err)
		}
	})
}

// whileHeld starts call(0) to call(n-1) while the store's running statement is held, waits
// until waiting counts all n as waiting, then runs release, which lets it go, and returns
// each call's error once all have returned.
func whileHeld(t *testing.T, n int, waiting func() int, call func(i int) error, release func()) []error {
	t.Helper()
	errs := make([]error, n)
	done := make(chan struct{}, n)
	for i := range n {
		go func() {
			errs[i] = call(i)
			done <- struct{}{}
		}()
	}
	until(t, "every call waits", func() bool { return waiting() == n })
	release()
	for range n {
		<-done
	}
	return errs
}

// Creates that wait while a create statement runs are written together, in one transaction, and
// each has the result it has alone: a new key on a clean card is written with its charge; a
// key that exists, a card with a refusal on record or a live reference writes nothing, and
// the create is not applied (the request then reads its snapshot).
func TestWaitingCreatesAreWrittenTogether(t *testing.T) {
	ctx := context.Background()
	pool, db, merchant := groupingStore(t, "m-group-")
	for _, cr := range []charge.Creation{groupCreation(merchant, "k-existing", "fp_g1", ""), groupCreation(merchant, "k-ref", "fp_g2", "ref-live")} {
		if _, err := db.Create(ctx, cr); err != nil {
			t.Fatalf("a lone create: %v", err)
		}
	}
	refused := "fp_refused_" + merchant
	if _, err := pool.Exec(ctx, `INSERT INTO card_states (processor_account, fingerprint, through_at) VALUES ('acct_1', $1, now())`, refused); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = pool.Exec(context.Background(), `DELETE FROM card_states WHERE fingerprint = $1`, refused)
	})

	creations := []charge.Creation{
		groupCreation(merchant, "k-new-1", "fp_g3", "ref-new"),
		groupCreation(merchant, "k-existing", "fp_g4", ""),
		groupCreation(merchant, "k-new-2", refused, ""),
		groupCreation(merchant, "k-new-3", "fp_g5", "ref-live"),
		groupCreation(merchant, "k-new-4", "fp_g3", ""),
	}
	creations[4].Charge.Metadata = map[string]string{"order": "o-4"}
	errs := createGrouped(t, db, merchant, creations)
	written := []bool{true, false, false, false, true}
	var ids []string
	for i, err := range errs {
		switch {
		case written[i] && err != nil:
			t.Errorf("creation %d (%s): %v, want it written", i, creations[i].Key, err)
		case !written[i] && !errors.Is(err, charge.ErrNotApplied):
			t.Errorf("creation %d (%s): %v, want ErrNotApplied", i, creations[i].Key, err)
		case written[i]:
			ids = append(ids, creations[i].Charge.ID)
		}
	}
	rows, err := pool.Query(ctx, `SELECT c.id, c.status, c.card_fingerprint, COALESCE(c.reference, ''), c.metadata->>'order',
		k.charge_id, k.locked_until > now(), c.xmin::text FROM charges c JOIN idempotency_keys k ON k.merchant_id = c.merchant_id
		AND k.key = c.idempotency_key WHERE c.merchant_id = $1 AND c.id = ANY($2) ORDER BY c.idempotency_key`, merchant, ids)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		ID, Status, Card, Reference string
		Order                       *string
		KeyCharge                   string
		Locked                      bool
		Xmin                        string
	}
	got, err := pgx.CollectRows(rows, pgx.RowToStructByPos[row])
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("rows written: %+v, want the two new charges with their keys", got)
	}
	if got[0].Xmin != got[1].Xmin {
		t.Errorf("the two charges were written by transactions %s and %s, want one", got[0].Xmin, got[1].Xmin)
	}
	for i, want := range []struct{ id, card, ref, order string }{
		{creations[0].Charge.ID, "fp_g3", "ref-new", ""}, {creations[4].Charge.ID, "fp_g3", "", "o-4"},
	} {
		g := got[i]
		order := ""
		if g.Order != nil {
			order = *g.Order
		}
		if g.ID != want.id || g.KeyCharge != want.id || g.Status != "processing" || g.Card != want.card || g.Reference != want.ref ||
			order != want.order || !g.Locked {
			t.Errorf("written %+v, want charge %s on %s, reference %q, order %q, processing, its key bound and locked", g, want.id, want.card, want.ref, want.order)
		}
	}
}

// A group whose members share a key is refused by the database as a whole and its members
// are created one by one: one of them writes the key, the other is not applied.
func TestGroupSharingAKeyIsCreatedOneByOne(t *testing.T) {
	ctx := context.Background()
	pool, db, merchant := groupingStore(t, "m-group-")
	creations := []charge.Creation{
		groupCreation(merchant, "k-shared", "fp_s1", ""),
		groupCreation(merchant, "k-shared", "fp_s2", ""),
		groupCreation(merchant, "k-own", "fp_s3", ""),
	}
	errs := createGrouped(t, db, merchant, creations)
	var writes, notApplied int
	for i, err := range errs[:2] {
		switch {
		case err == nil:
			writes++
		case errors.Is(err, charge.ErrNotApplied):
			notApplied++
		default:
			t.Errorf("creation %d: %v", i, err)
		}
	}
	if writes != 1 || notApplied != 1 || errs[2] != nil {
		t.Fatalf("results %v: want one of the shared key's creations written, the other not applied, and k-own written", errs)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM charges WHERE merchant_id = $1 AND idempotency_key IN ('k-shared', 'k-own')`, merchant).Scan(&n); err != nil || n != 2 {
		t.Fatalf("charges written: %d (%v), want 2", n, err)
	}
}
