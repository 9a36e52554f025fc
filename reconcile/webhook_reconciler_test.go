package reconcile_test

import (
	"context"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/sim"
	"github.com/paygate/paygate/processor"
	"github.com/paygate/paygate/reconcile"
)

// TestReconcileEvent: a check triggered by an event reads the PaymentIntent the event names,
// once, even when no answer gave the charge its id, and decides from the read; an event of
// another account is not read, and one naming an unknown PaymentIntent goes to review. The
// event is kept in the check's evidence.
func TestReconcileEvent(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		event      func(in processor.Intent) reconcile.Event
		wantKind   reconcile.Kind
		wantReason reconcile.Reason
		wantReads  int64
	}{
		{"settled by one read", func(in processor.Intent) reconcile.Event {
			return reconcile.Event{ID: "evt_1", Type: reconcile.EventSucceeded, Account: simAccount, Intent: in}
		}, reconcile.KindResolve, "", 1},
		{"the event names no account", func(in processor.Intent) reconcile.Event {
			return reconcile.Event{ID: "evt_1", Type: reconcile.EventSucceeded, Intent: in}
		}, reconcile.KindResolve, "", 1},
		{"another account", func(in processor.Intent) reconcile.Event {
			return reconcile.Event{ID: "evt_1", Type: reconcile.EventSucceeded, Account: "acct_elsewhere", Intent: in}
		}, reconcile.KindReview, reconcile.ReasonEventOtherAccount, 0},
		{"an unknown PaymentIntent", func(in processor.Intent) reconcile.Event {
			in.ID = "pi_unknown"
			return reconcile.Event{ID: "evt_1", Type: reconcile.EventSucceeded, Account: simAccount, Intent: in}
		}, reconcile.KindReview, reconcile.ReasonEventNotFound, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			counter := &countingReads{}
			b := setup(t, options{reads: func(r reconcile.Reads) reconcile.Reads { counter.Reads = r; return counter }})
			// The answer is lost: the charge does not know its PaymentIntent.
			c := b.send(t, "ch_evt", "pm_card_visa", sim.Step{DropResponse: true}, 5*time.Second)
			if c.ProcessorRef != "" {
				t.Fatalf("processor_ref: got %q, want none after a lost answer", c.ProcessorRef)
			}
			var id string
			for _, e := range b.sim.Ledger() {
				if e.IdempotencyKey == "pg_ch_evt" {
					id = e.PaymentIntent
				}
			}
			in, res := b.client.Retrieve(context.Background(), id) // what the event's payload shows
			if !res.Answered() {
				t.Fatalf("retrieve %s: %+v", id, res)
			}
			e := tc.event(in)
			b.clock.Set(c.FirstSentAt.Add(2 * time.Second))
			chk, err := b.rec.ReconcileEvent(context.Background(), c, e)
			if err != nil {
				t.Fatal(err)
			}
			if d := chk.Decision; d.Kind != tc.wantKind || d.Reason != tc.wantReason {
				t.Fatalf("decision: got %s %s, want %s %s", d.Kind, d.Reason, tc.wantKind, tc.wantReason)
			}
			if n := counter.calls.Load(); n != tc.wantReads {
				t.Fatalf("reads: got %d, want %d", n, tc.wantReads)
			}
			if chk.Evidence.Event == nil || chk.Evidence.Event.ID != "evt_1" {
				t.Fatalf("evidence: got event %+v, want the event attached", chk.Evidence.Event)
			}
			if tc.wantKind == reconcile.KindResolve {
				if d := chk.Decision; d.Outcome != reconcile.OutcomeSucceeded || d.Path != reconcile.PathRetrieve || d.PaymentIntent != id {
					t.Fatalf("resolution: got %+v, want succeeded by retrieve of %s", d, id)
				}
			}
			if got := b.store.checksOf("ch_evt"); len(got) != 1 {
				t.Fatalf("checks recorded: got %d, want 1", len(got))
			}
		})
	}
}
