package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paygate/paygate/processor"
	"github.com/paygate/paygate/reconcile"
	"github.com/paygate/paygate/store"
)

// TestReviewEventsCommand: `paygate review events` lists the processor events waiting in
// review, with what their payload showed; `paygate review ack` takes one out, once.
func TestReviewEventsCommand(t *testing.T) {
	t.Parallel()
	url := migratedDatabase(t)
	env := map[string]string{"DATABASE_URL": url}
	run := func(args ...string) (int, string) {
		var out, errOut bytes.Buffer
		code := Run(context.Background(), args, &out, &errOut, func(k string) string { return env[k] })
		return code, out.String() + errOut.String()
	}
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	e := reconcile.Event{ID: "evt_review_cmd", Type: reconcile.EventSucceeded, Account: "acct_1",
		Intent: processor.Intent{ID: "pi_1", ChargeID: "ch_nobody", Status: "succeeded", Amount: 1999, Currency: "usd"}}
	body, _ := json.Marshal(e)
	if _, _, err := store.New(pool).RecordWebhookEvent(ctx, reconcile.EventRecord{ID: e.ID, Type: e.Type, Account: e.Account,
		ChargeID: "ch_nobody", PaymentIntent: "pi_1", Evidence: body},
		func(context.Context, pgx.Tx, reconcile.EventCharge) (reconcile.EventDecision, error) {
			return reconcile.EventDecision{Disposition: reconcile.DispositionUnknownCharge, Review: true}, nil
		}); err != nil {
		t.Fatal(err)
	}

	if code, out := run("review", "events"); code != 0 || !strings.Contains(out, "evt_review_cmd") || !strings.Contains(out, "1999 usd") ||
		!strings.Contains(out, "ch_nobody") {
		t.Fatalf("review events: exit %d:\n%s", code, out)
	}
	code, out := run("review", "events", "--json")
	var got reconcile.EventInReview
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &got); code != 0 || err != nil || got.ID != e.ID || !strings.Contains(string(got.Event), `"pi_1"`) {
		t.Fatalf("review events --json: exit %d, %v:\n%s", code, err, out)
	}
	if code, out := run("review", "ack", e.ID); code != 0 || !strings.Contains(out, "acknowledged") {
		t.Fatalf("review ack: exit %d:\n%s", code, out)
	}
	if code, out := run("review", "events"); code != 0 || strings.Contains(out, e.ID) {
		t.Fatalf("review events after the ack: exit %d:\n%s", code, out)
	}
	if code, out := run("review", "ack", e.ID); code != 1 || !strings.Contains(out, "no event") {
		t.Fatalf("a second ack: exit %d:\n%s", code, out)
	}
	for _, args := range [][]string{{"review"}, {"review", "nope"}, {"review", "ack"}, {"review", "events", "--limit", "0"}, {"review", "events", "x"}} {
		if code, out := run(args...); code != exitUsage {
			t.Errorf("%v: exit %d, want %d:\n%s", args, code, exitUsage, out)
		}
	}
}
