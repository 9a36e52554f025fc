package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/paygate/paygate/event"
	"github.com/paygate/paygate/internal/dbtest"
	"github.com/paygate/paygate/store"
)

// TestEventLog: the events are read from what each change wrote: the first outcome and a
// scheduled reattempt from the charge's row, every later change from its audit entry; an
// audit entry that changes no status a merchant hears of is no event.
func TestEventLog(t *testing.T) {
	t.Parallel()
	tx := dbtest.Tx(t)
	ctx := context.Background()
	db := store.New(tx)
	exec := func(sql string, args ...any) {
		t.Helper()
		if _, err := tx.Exec(ctx, sql, args...); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	charge := func(id, status string, outcomeAt *time.Time, next string) {
		t.Helper()
		exec(`INSERT INTO charges (id, merchant_id, amount, currency, initiator, payment_method, status, created_at,
			outcome_at, outcome_status, next_reattempt_id, finalized_at, live)
			VALUES ($1, 'm_ev', 100, 'usd', 'customer', 'pm_card_visa', $2::text, $3, $4, CASE WHEN $4::timestamptz IS NOT NULL THEN $2 END,
			NULLIF($5, ''), $4, $2 IN ('processing', 'pending', 'succeeded'))`, id, status, base, outcomeAt, next)
	}
	at := func(s int) *time.Time { v := base.Add(time.Duration(s) * time.Second); return &v }
	charge("ch_aaaa", "succeeded", at(1), "")       // approved in its run
	charge("ch_bbbb", "declined", at(2), "ch_next") // declined, reattempt scheduled
	charge("ch_cccc", "processing", nil, "")        // still running: no event
	charge("ch_dddd", "succeeded", at(3), "")       // pending first, settled by reconciliation, then resolved by hand
	exec(`UPDATE charges SET outcome_status = 'pending' WHERE id = 'ch_dddd'`)
	exec(`INSERT INTO charge_events (charge_id, at, actor, action, reason, status_before, status_after) VALUES
		('ch_dddd', $1, 'reconciler', 'resolved', 'list', 'pending', 'succeeded'),
		('ch_dddd', $2, 'gateway', 'review', 'conflict', 'succeeded', 'succeeded'),
		('ch_dddd', $3, 'operator:key_1', 'manual_resolution', NULL, 'succeeded', 'succeeded'),
		('ch_dddd', $4, 'gateway', 'duplicate_reference', NULL, 'succeeded', 'succeeded')`, at(4), at(5), at(6), at(7))

	list, more, err := db.Events(ctx, event.ListParams{MerchantID: "m_ev", Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range list {
		got = append(got, e.ChargeID+" "+string(e.Type))
	}
	want := []string{"ch_dddd charge.resolved", "ch_dddd charge.review_required", "ch_dddd charge.succeeded",
		"ch_dddd charge.pending", "ch_bbbb charge.reattempt_scheduled", "ch_bbbb charge.declined", "ch_aaaa charge.succeeded"}
	if more || len(got) != len(want) {
		t.Fatalf("events: got %v (more %v), want %v", got, more, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("events: got %v, want %v", got, want)
		}
	}

	// One by id; a page after it; another merchant's is not found.
	one, err := db.EventByID(ctx, "m_ev", list[2].ID)
	if err != nil || one != list[2] {
		t.Fatalf("EventByID(%s): got %+v %v, want %+v", list[2].ID, one, err, list[2])
	}
	page, more, err := db.Events(ctx, event.ListParams{MerchantID: "m_ev", After: &list[2], Limit: 2})
	if err != nil || !more || len(page) != 2 || page[0] != list[3] || page[1] != list[4] {
		t.Fatalf("the page after %s: got %v more %v %v", list[2].ID, page, more, err)
	}
	if _, err := db.EventByID(ctx, "m_other", list[2].ID); !errors.Is(err, event.ErrNotFound) {
		t.Fatalf("another merchant's event: got %v, want not found", err)
	}
	typed, _, err := db.Events(ctx, event.ListParams{MerchantID: "m_ev", Type: event.ChargeSucceeded, Limit: 10})
	if err != nil || len(typed) != 2 {
		t.Fatalf("charge.succeeded only: got %v %v", typed, err)
	}

	// The dispatcher: nothing while no merchant has a live endpoint; then only merchants with
	// endpoints, only endpoints that want the type and existed when it happened, only events
	// in the window.
	exec(`INSERT INTO webhook_endpoints (id, merchant_id, url, events, secret, created_at, disabled_at) VALUES
		('we_0', 'm_ev', 'https://off.example/', '{charge.succeeded}', 'whsec_0', $1, $1)`, base)
	if due, err := db.NewDeliveries(ctx, base, base.Add(time.Hour), 5*time.Minute); err != nil || len(due) != 0 {
		t.Fatalf("due deliveries with a disabled endpoint only: got %v, %v; want none", due, err)
	}
	exec(`INSERT INTO webhook_endpoints (id, merchant_id, url, events, secret, created_at) VALUES
		('we_1', 'm_ev', 'https://a.example/', '{charge.succeeded}', 'whsec_1', $1),
		('we_2', 'm_ev', 'https://b.example/', '{charge.succeeded,charge.declined}', 'whsec_2', $2)`, base, at(3))
	exec(`UPDATE charges SET created_at = $1`, base)
	due, err := db.NewDeliveries(ctx, base, base.Add(time.Hour), 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	got = nil
	for _, d := range due {
		got = append(got, d.Event.ChargeID+" "+string(d.Event.Type)+" "+d.EndpointID)
	}
	// ch_bbbb's decline: we_1 does not want it, and we_2 was registered after it.
	want = []string{"ch_aaaa charge.succeeded we_1", "ch_dddd charge.succeeded we_1", "ch_dddd charge.succeeded we_2"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] || got[2] != want[2] {
		t.Fatalf("due deliveries: got %v, want %v", got, want)
	}
}
