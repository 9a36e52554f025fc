package store_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/apikey"
	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/idempotency"
	"github.com/paygate/paygate/internal/dbtest"
	"github.com/paygate/paygate/store"
)

func newMerchant(t testing.TB, db *store.DB, id string) {
	t.Helper()
	k, _ := apikey.Generate()
	if err := db.CreateKey(context.Background(), id, apikey.RoleCheckout, k); err != nil {
		t.Fatal(err)
	}
}

func newCharge(merchant, ref string) charge.Charge {
	id := charge.NewID()
	return charge.Charge{ID: id, MerchantID: merchant, Amount: 1000, Currency: "usd", PaymentMethod: "pm_card_visa",
		Reference: ref, Initiator: charge.InitiatorCustomer, ReattemptMode: charge.ReattemptManual,
		ProcessorKey: charge.ProcessorKey(id), ProcessorAccount: "acct_1"}
}

var testCard = &charge.Card{Fingerprint: "fp_test", Network: "visa", ExpMonth: 12, ExpYear: 2034}

func begin(t *testing.T, db *store.DB, merchant, key string, fp idempotency.Fingerprint, c charge.Charge) charge.Plan {
	t.Helper()
	b, err := charge.Begin(context.Background(), db, charge.BeginParams{
		MerchantID: merchant, Key: key, Fingerprint: fp, LockFor: time.Minute, New: c, Card: testCard})
	if err != nil {
		t.Fatalf("BeginCharge: %v", err)
	}
	return b
}

func TestBeginChargeVerdicts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := store.New(dbtest.Tx(t))
	newMerchant(t, db, "m1")
	fp := idempotency.Fingerprint{1}

	first := begin(t, db, "m1", "k1", fp, newCharge("m1", ""))
	if first.Verdict != idempotency.Proceed || !first.Created || first.Charge == nil {
		t.Fatalf("first request: got %+v, want a created charge", first)
	}
	if first.Charge.Status != charge.StatusProcessing || first.Charge.ProcessorKey != "pg_"+first.Charge.ID {
		t.Fatalf("created charge: got status %s key %s", first.Charge.Status, first.Charge.ProcessorKey)
	}
	if first.Charge.IdempotencyKey != "k1" {
		t.Fatalf("created charge: idempotency key %q, want k1", first.Charge.IdempotencyKey)
	}

	// While the first request runs, the same key is in use.
	if b := begin(t, db, "m1", "k1", fp, newCharge("m1", "")); b.Verdict != idempotency.InUse {
		t.Fatalf("concurrent request: got verdict %v, want InUse", b.Verdict)
	}
	// Another body under the same key is refused, running or not.
	if b := begin(t, db, "m1", "k1", idempotency.Fingerprint{2}, newCharge("m1", "")); b.Verdict != idempotency.Mismatch {
		t.Fatalf("other body: got verdict %v, want Mismatch", b.Verdict)
	}
	// The same key of another merchant is another key.
	newMerchant(t, db, "m2")
	if b := begin(t, db, "m2", "k1", fp, newCharge("m2", "")); !b.Created {
		t.Fatalf("other merchant's key: got %+v, want a new charge", b)
	}

	c := first.Charge
	c.Status = charge.StatusDeclined
	c.ProcessorRef = "pi_123"
	err := db.FinishCharge(ctx, charge.FinishParams{MerchantID: "m1", Key: "k1", Charge: c,
		Attempts:       []charge.Attempt{{StartedAt: time.Now(), Class: "decline", HTTPStatus: 402, ProcessorCode: "card_declined"}},
		ResponseStatus: 402, ResponseBody: []byte(`{"status":"declined"}`)})
	if err != nil {
		t.Fatal(err)
	}
	replay := begin(t, db, "m1", "k1", fp, newCharge("m1", ""))
	if replay.Verdict != idempotency.Replay || string(replay.Record.ResponseBody) != `{"status":"declined"}` || replay.Record.ResponseStatus != 402 {
		t.Fatalf("after finish: got %+v, want the stored 402 replayed", replay)
	}
	got, err := db.Charge(ctx, "m1", c.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != charge.StatusDeclined || got.Attempts != 1 || len(got.AttemptsDetail) != 1 || got.ProcessorRef != "pi_123" {
		t.Fatalf("stored charge: got %+v", got)
	}
	if _, err := db.Charge(ctx, "m2", c.ID); !errors.Is(err, charge.ErrNotFound) {
		t.Fatalf("another merchant's charge: got %v, want ErrNotFound", err)
	}
}

func TestBeginChargeResumesAfterExpiredLock(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := store.New(dbtest.Tx(t))
	newMerchant(t, db, "m1")
	fp := idempotency.Fingerprint{3}
	b, err := charge.Begin(ctx, db, charge.BeginParams{MerchantID: "m1", Key: "k", Fingerprint: fp,
		LockFor: -time.Second, New: newCharge("m1", ""), Card: testCard}) // a lock that has already expired: a crashed request
	if err != nil {
		t.Fatal(err)
	}
	again := begin(t, db, "m1", "k", fp, newCharge("m1", ""))
	if again.Verdict != idempotency.Proceed || again.Created || again.Charge.ID != b.Charge.ID {
		t.Fatalf("retry after crash: got %+v, want to resume charge %s", again, b.Charge.ID)
	}
}

func TestDuplicateReference(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := store.New(dbtest.Tx(t))
	newMerchant(t, db, "m1")
	first := begin(t, db, "m1", "k1", idempotency.Fingerprint{1}, newCharge("m1", "order-7"))
	dup := begin(t, db, "m1", "k2", idempotency.Fingerprint{2}, newCharge("m1", "order-7"))
	if dup.DuplicateOf != first.Charge.ID || dup.Created {
		t.Fatalf("second live charge with the reference: got %+v, want DuplicateOf %s", dup, first.Charge.ID)
	}
	// Once the first is declined, the reference is free again.
	c := first.Charge
	c.Status = charge.StatusDeclined
	if err := db.FinishCharge(ctx, charge.FinishParams{MerchantID: "m1", Key: "k1", Charge: c, ResponseStatus: 402, ResponseBody: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	again := begin(t, db, "m1", "k3", idempotency.Fingerprint{3}, newCharge("m1", "order-7"))
	if !again.Created {
		t.Fatalf("reference after decline: got %+v, want a new charge", again)
	}
}

func TestChargesPagination(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := store.New(dbtest.Tx(t))
	newMerchant(t, db, "m1")
	var ids []string
	for i := range 5 {
		b := begin(t, db, "m1", "key"+string(rune('a'+i)), idempotency.Fingerprint{byte(i)}, newCharge("m1", ""))
		ids = append(ids, b.Charge.ID)
	}
	var seen []string
	after := ""
	for {
		page, more, err := db.Charges(ctx, charge.ListParams{MerchantID: "m1", Limit: 2, StartingAfter: after})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range page {
			seen = append(seen, c.ID)
		}
		if !more {
			break
		}
		after = page[len(page)-1].ID
	}
	if len(seen) != 5 {
		t.Fatalf("pages: got %d charges, want 5", len(seen))
	}
	for i := range seen {
		if seen[i] != ids[len(ids)-1-i] {
			t.Fatalf("pages: got %v, want newest first %v", seen, ids)
		}
	}
	failed, _, err := db.Charges(ctx, charge.ListParams{MerchantID: "m1", Limit: 10, Status: charge.StatusFailed})
	if err != nil || len(failed) != 0 {
		t.Fatalf("status filter: got %d, %v; want none", len(failed), err)
	}
}

func TestReapKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := dbtest.Tx(t)
	db := store.New(tx)
	newMerchant(t, db, "m_reap")
	old := begin(t, db, "m_reap", "old", idempotency.Fingerprint{1}, newCharge("m_reap", ""))
	fresh := begin(t, db, "m_reap", "fresh", idempotency.Fingerprint{2}, newCharge("m_reap", ""))
	live := begin(t, db, "m_reap", "live", idempotency.Fingerprint{3}, newCharge("m_reap", ""))
	for _, b := range []charge.Plan{old, fresh} {
		c := b.Charge
		c.Status = charge.StatusSucceeded
		if err := db.FinishCharge(ctx, charge.FinishParams{MerchantID: "m_reap", Key: b.Record.Key, Charge: c, ResponseStatus: 200, ResponseBody: []byte("{}")}); err != nil {
			t.Fatal(err)
		}
	}
	// The first charge reached its final state two days ago; the live one is still pending.
	if _, err := tx.Exec(ctx, `UPDATE charges SET finalized_at = now() - interval '48 hours' WHERE id = $1`, old.Charge.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `UPDATE charges SET status = 'pending', live = true, created_at = now() - interval '30 days' WHERE id = $1`, live.Charge.ID); err != nil {
		t.Fatal(err)
	}
	n, err := db.ReapKeys(ctx, 25*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Fatalf("ReapKeys: got %d keys, want 1", n)
	}
	if b := begin(t, db, "m_reap", "fresh", idempotency.Fingerprint{2}, newCharge("m_reap", "")); b.Verdict != idempotency.Replay {
		t.Fatalf("a key within retention: got verdict %v, want Replay", b.Verdict)
	}
	if b := begin(t, db, "m_reap", "live", idempotency.Fingerprint{3}, newCharge("m_reap", "")); b.Created {
		t.Fatal("the key of a pending charge was reaped")
	}
}

// A key is stored with its request's first 128 bits, the part compared; a key stored with the
// whole hash (the form of the releases before) is the same request: a retry of it replays,
// another body is refused.
func TestKeyStoredWithItsFirst128Bits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := dbtest.Tx(t)
	db := store.New(tx)
	fp := idempotency.Fingerprint{7, 7, 7, 15: 7, 31: 7}
	for _, key := range []string{"k-half", "k-whole"} {
		approved(t, db, key, fp, time.Millisecond)
		var stored []byte
		if err := tx.QueryRow(ctx, `SELECT fingerprint FROM idempotency_keys WHERE merchant_id = 'm1' AND key = $1`, key).Scan(&stored); err != nil || !bytes.Equal(stored, fp[:idempotency.MatchedLen]) {
			t.Fatalf("stored fingerprint %x (%v), want the first %d bytes of %x", stored, err, idempotency.MatchedLen, fp)
		}
	}
	if _, err := tx.Exec(ctx, `UPDATE idempotency_keys SET fingerprint = $1 WHERE merchant_id = 'm1' AND key = 'k-whole'`, fp[:]); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"k-half", "k-whole"} {
		if b := begin(t, db, "m1", key, fp, newCharge("m1", "")); b.Verdict != idempotency.Replay || b.Record.ResponseStatus != 200 {
			t.Fatalf("%s, the same request: got %+v, want the stored 200 replayed", key, b)
		}
		if b := begin(t, db, "m1", key, idempotency.Fingerprint{7, 7, 8}, newCharge("m1", "")); b.Verdict != idempotency.Mismatch {
			t.Fatalf("%s, another body: got verdict %v, want Mismatch", key, b.Verdict)
		}
	}
}

// An attempt's start reads the same from the charge and from the charge_attempts view, in the
// attempt log's form of offsets from the charge's creation and in the absolute form logs were
// written in before.
func TestAttemptStartsInBothForms(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := dbtest.Tx(t)
	db := store.New(tx)
	c := approved(t, db, "k-starts", idempotency.Fingerprint{9}, 2345*time.Microsecond)
	started := c.CreatedAt.Add(2345 * time.Microsecond)
	check := func(form string) {
		t.Helper()
		got, err := db.Charge(ctx, "m1", c.ID)
		if err != nil {
			t.Fatal(err)
		}
		var viewed time.Time
		if err := tx.QueryRow(ctx, `SELECT started_at FROM charge_attempts WHERE charge_id = $1`, c.ID).Scan(&viewed); err != nil {
			t.Fatal(err)
		}
		if len(got.AttemptsDetail) != 1 || !got.AttemptsDetail[0].StartedAt.Equal(started) || !viewed.Equal(started) {
			t.Fatalf("%s: started %v from the charge, %v from the view, want %v", form, got.AttemptsDetail, viewed, started)
		}
	}
	var log string
	if err := tx.QueryRow(ctx, `SELECT attempt_log FROM charges WHERE id = $1`, c.ID).Scan(&log); err != nil || !strings.HasPrefix(log, "[[1,2345,") {
		t.Fatalf("attempt log %q (%v), want the start 2345 microseconds after the creation", log, err)
	}
	check("offset")
	if _, err := tx.Exec(ctx, `UPDATE charges SET attempt_log = '[[1,' || $2::bigint || substr(attempt_log, length('[[1,2345') + 1)
		WHERE id = $1`, c.ID, started.UnixMicro()); err != nil {
		t.Fatal(err)
	}
	check("absolute")
}

// approved makes a new charge of merchant m1 under key with fingerprint fp, approved at its
// first attempt, which started a duration after past the charge's creation, and returns it.
func approved(t *testing.T, db *store.DB, key string, fp idempotency.Fingerprint, after time.Duration) *charge.Charge {
	t.Helper()
	newMerchant(t, db, "m1")
	c := begin(t, db, "m1", key, fp, newCharge("m1", "")).Charge
	c.Status, c.ProcessorRef = charge.StatusSucceeded, "pi_"+key
	if err := db.FinishCharge(context.Background(), charge.FinishParams{MerchantID: "m1", Key: key, Charge: c,
		Attempts:       []charge.Attempt{{N: 1, StartedAt: c.CreatedAt.Add(after), Class: "success", HTTPStatus: 200}},
		ResponseStatus: 200, ResponseBody: []byte(`{"status":"succeeded"}`)}); err != nil {
		t.Fatal(err)
	}
	return c
}
