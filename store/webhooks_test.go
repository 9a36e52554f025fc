package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/idempotency"
	"github.com/paygate/paygate/internal/dbtest"
	"github.com/paygate/paygate/reconcile"
	"github.com/paygate/paygate/store"
)

// TestRecordWebhookEvent: an event id is recorded once; the decider sees the charge the event
// names and its disposition is kept; an error from the decider keeps nothing; old ids are
// reaped.
func TestRecordWebhookEvent(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := store.New(dbtest.Pool(t))
	newMerchant(t, db, "m_hooks")
	b := begin(t, db, "m_hooks", "k1", idempotency.Fingerprint{1}, newCharge("m_hooks", ""))

	var saw []reconcile.EventCharge
	decide := func(_ context.Context, _ pgx.Tx, c reconcile.EventCharge) (reconcile.EventDecision, error) {
		saw = append(saw, c)
		return reconcile.EventDecision{Disposition: "check"}, nil
	}
	e := reconcile.EventRecord{ID: "evt_1", Type: "payment_intent.succeeded", ChargeID: b.Charge.ID, PaymentIntent: "pi_1"}
	for i, want := range []bool{false, true} {
		seen, disp, err := db.RecordWebhookEvent(ctx, e, decide)
		if err != nil || seen != want {
			t.Fatalf("delivery %d: got seen %v (%q), %v; want %v", i+1, seen, disp, err, want)
		}
	}
	if len(saw) != 1 || !saw[0].Found || saw[0].MerchantID != "m_hooks" || saw[0].Status != charge.StatusProcessing || saw[0].Manual ||
		saw[0].Amount != b.Charge.Amount || saw[0].Currency != b.Charge.Currency {
		t.Fatalf("decider: got %+v, want one call with the processing charge", saw)
	}
	if d, err := db.WebhookEventDisposition(ctx, "evt_1"); err != nil || d != "check" {
		t.Fatalf("disposition: got %q, %v", d, err)
	}

	unknown := reconcile.EventRecord{ID: "evt_2_" + b.Charge.ID, Type: "payment_intent.succeeded", Account: "acct_1", ChargeID: "ch_nobody",
		PaymentIntent: "pi_2", Evidence: []byte(`{"id":"evt_2"}`)}
	if _, _, err := db.RecordWebhookEvent(ctx, unknown, func(_ context.Context, _ pgx.Tx, c reconcile.EventCharge) (reconcile.EventDecision, error) {
		if c.Found {
			t.Errorf("unknown charge: got %+v, want not found", c)
		}
		return reconcile.EventDecision{Disposition: "unknown_charge", Review: true}, nil
	}); err != nil {
		t.Fatal(err)
	}
	inReview := func() *reconcile.EventInReview {
		t.Helper()
		evs, err := db.WebhookEventsInReview(ctx, 1000)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range evs {
			if e.ID == unknown.ID {
				return &e
			}
		}
		return nil
	}
	if e := inReview(); e == nil || e.Account != "acct_1" || e.PaymentIntent != "pi_2" || string(e.Event) != `{"id": "evt_2"}` {
		t.Fatalf("in review: got %+v, want the unknown charge's event with its evidence", e)
	}

	failed := reconcile.EventRecord{ID: "evt_3", Type: "payment_intent.succeeded", ChargeID: b.Charge.ID}
	if _, _, err := db.RecordWebhookEvent(ctx, failed, func(context.Context, pgx.Tx, reconcile.EventCharge) (reconcile.EventDecision, error) {
		return reconcile.EventDecision{}, errors.New("test: enqueue failed")
	}); err == nil {
		t.Fatal("a failed decider: got nil, want its error")
	}
	if _, err := db.WebhookEventDisposition(ctx, "evt_3"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("after a failed decider: got %v, want ErrNotFound", err)
	}

	if n, err := db.ReapWebhookEvents(ctx, time.Hour); err != nil || n != 0 {
		t.Fatalf("reap within retention: got %d, %v; want 0", n, err)
	}
	if n, err := db.ReapWebhookEvents(ctx, -time.Second); err != nil || n != 1 {
		t.Fatalf("reap past retention: got %d, %v; want 1, the event in review kept", n, err)
	}
	if inReview() == nil {
		t.Fatal("the event in review was reaped")
	}
}
