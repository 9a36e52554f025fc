package reconcile_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"go.uber.org/zap/zaptest"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/internal/dbtest"
	"github.com/paygate/paygate/jobs"
	"github.com/paygate/paygate/processor"
	"github.com/paygate/paygate/reconcile"
	"github.com/paygate/paygate/store"
)

// hooks is a janitor bundle with counted reads and the receiver of processor events on a
// job queue (not started: the tests run the checks themselves).
type hooks struct {
	*janitorBundle
	reads *opReads
	recv  *reconcile.Webhooks
}

func setupHooks(t *testing.T) *hooks {
	t.Helper()
	b := setupJanitor(t)
	pool := dbtest.Pool(t)
	if err := jobs.Migrate(b.ctx, pool); err != nil {
		t.Fatal(err)
	}
	h := &hooks{janitorBundle: b, reads: &opReads{Reads: b.reads}}
	reg := jobs.NewRegistry()
	var err error
	b.j, err = reconcile.NewJanitor(reconcile.JanitorConfig{Store: b.db, Reconciler: reconcile.Config{Account: b.account, Reads: h.reads}, Log: zaptest.NewLogger(t)}, reg)
	if err != nil {
		t.Fatal(err)
	}
	h.recv = reconcile.NewWebhooks(b.db, zaptest.NewLogger(t))
	if err := h.recv.AddReaper(reg); err != nil {
		t.Fatal(err)
	}
	q, err := jobs.New(pool, zaptest.NewLogger(t), reg, jobs.Config{})
	if err != nil {
		t.Fatal(err)
	}
	h.recv.Attach(q)
	return h
}

// paid makes the charge take effect at the processor under its own key and returns the
// PaymentIntent as an event's payload shows it.
func (h *hooks) paid(t *testing.T, id string) processor.Intent {
	t.Helper()
	a := h.proc.CreatePayment(h.ctx, processor.PaymentParams{Key: charge.ProcessorKey(id), ChargeID: id,
		Amount: 1000, Currency: "usd", PaymentMethod: "pm_card_visa"})
	in, res := h.proc.Retrieve(h.ctx, a.PaymentIntent)
	if !res.Answered() || in.ChargeID != id {
		t.Fatalf("the charge's PaymentIntent: got %+v, %+v", in, res)
	}
	return in
}

func (h *hooks) event(typ string, in processor.Intent) reconcile.Event {
	return reconcile.Event{ID: "evt_" + charge.NewID(), Type: typ, Created: time.Now().Truncate(time.Second),
		Account: h.account, ReceivedAt: time.Now(), Intent: in}
}

// queued returns the event checks enqueued for a charge.
func (h *hooks) queued(t *testing.T, chargeID string) int {
	t.Helper()
	var n int
	err := dbtest.Pool(t).QueryRow(h.ctx, `SELECT count(*) FROM river_job WHERE kind = $1 AND args->>'charge_id' = $2`,
		reconcile.EventArgs{}.Kind(), chargeID).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (h *hooks) setStatus(t *testing.T, id string, s charge.Status) {
	t.Helper()
	if _, err := dbtest.Pool(t).Exec(h.ctx, `UPDATE charges SET status = $2::text, live = $2 IN ('processing', 'pending', 'succeeded') WHERE id = $1`, id, string(s)); err != nil {
		t.Fatal(err)
	}
}

// TestReceiveDispositions: each new event is recorded once with what became of it; a final
// event about a charge that is not settled enqueues one check of it, in the same transaction;
// a replay of an id changes nothing.
func TestReceiveDispositions(t *testing.T) {
	t.Parallel()
	h := setupHooks(t)
	for _, tc := range []struct {
		name   string
		typ    string
		status charge.Status // "": no charge with that id
		intent func(in processor.Intent) processor.Intent
		want   string
	}{
		{"final event, pending charge", reconcile.EventSucceeded, charge.StatusPending, nil, reconcile.DispositionCheck},
		{"final event, charge still processing", reconcile.EventPaymentFailed, charge.StatusProcessing, nil, reconcile.DispositionCheck},
		{"final event, settled charge", reconcile.EventSucceeded, charge.StatusSucceeded, nil, reconcile.DispositionSettled},
		{"created, pending charge", "payment_intent.created", charge.StatusPending, nil, reconcile.DispositionNotFinal},
		{"processing, pending charge", "payment_intent.processing", charge.StatusPending, nil, reconcile.DispositionNotFinal},
		{"unknown charge", reconcile.EventSucceeded, "", func(in processor.Intent) processor.Intent {
			in.ChargeID = "ch_unknown" + charge.NewID()
			return in
		}, reconcile.DispositionUnknownCharge},
		{"not paygate's", reconcile.EventSucceeded, charge.StatusPending, func(in processor.Intent) processor.Intent {
			in.ChargeID = ""
			return in
		}, reconcile.DispositionNotPaygate},
		{"not a payment_intent event", "customer.created", charge.StatusPending, nil, reconcile.DispositionIgnored},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := h.pending(t, "pm_card_visa")
			in := h.paid(t, id)
			if tc.status != "" && tc.status != charge.StatusPending {
				h.setStatus(t, id, tc.status)
			}
			if tc.intent != nil {
				in = tc.intent(in)
			}
			e := h.event(tc.typ, in)
			for i, wantSeen := range []bool{false, true} {
				seen, err := h.recv.Receive(h.ctx, e)
				if err != nil || seen != wantSeen {
					t.Fatalf("delivery %d: got seen %v, %v; want %v", i+1, seen, err, wantSeen)
				}
			}
			got, err := h.db.WebhookEventDisposition(h.ctx, e.ID)
			if err != nil || got != tc.want {
				t.Fatalf("disposition: got %q, %v; want %q", got, err, tc.want)
			}
			wantJobs := 0
			if tc.want == reconcile.DispositionCheck {
				wantJobs = 1
			}
			if n := h.queued(t, id); n != wantJobs {
				t.Fatalf("checks enqueued: got %d, want %d", n, wantJobs)
			}
			if n := h.reads.total(); n != 0 {
				t.Fatalf("reads: got %d, want none when an event arrives", n)
			}
		})
	}
}

// TestReceiveFailsWhole: when the check cannot be enqueued, nothing of the event is kept, so
// the processor's retry of the delivery is a new event.
func TestReceiveFailsWhole(t *testing.T) {
	t.Parallel()
	h := setupHooks(t)
	id := h.pending(t, "pm_card_visa")
	e := h.event(reconcile.EventSucceeded, h.paid(t, id))
	h.recv.Attach(failingInserter{})
	if _, err := h.recv.Receive(h.ctx, e); err == nil {
		t.Fatal("Receive: got nil, want the enqueue's error")
	}
	if _, err := h.db.WebhookEventDisposition(h.ctx, e.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the event after a failed receipt: got %v, want not found", err)
	}
}

type failingInserter struct{ reconcile.TxInserter }

func (failingInserter) InsertTx(context.Context, pgx.Tx, river.JobArgs, *river.InsertOpts) (jobs.Inserted, error) {
	return jobs.Inserted{}, errors.New("test: queue down")
}

// TestCheckEvent: the check an event triggers settles a charge whose PaymentIntent id no
// answer gave with one read; a conflicting event sends it to review with the event in the
// check's evidence; a settled charge needs nothing; one still processing waits.
func TestCheckEvent(t *testing.T) {
	t.Parallel()
	h := setupHooks(t)

	t.Run("one read settles it", func(t *testing.T) {
		id := h.pending(t, "pm_card_visa")
		e := h.event(reconcile.EventSucceeded, h.paid(t, id))
		before := h.reads.total()
		chk, err := h.j.CheckEvent(h.ctx, id, e)
		if err != nil {
			t.Fatal(err)
		}
		if n := h.reads.total() - before; n != 1 {
			t.Fatalf("reads: got %d, want 1", n)
		}
		if d := chk.Decision; d.Kind != reconcile.KindResolve || d.Outcome != reconcile.OutcomeSucceeded || d.Path != reconcile.PathRetrieve {
			t.Fatalf("decision: got %+v, want resolved succeeded by retrieve", d)
		}
		c, err := h.db.Charge(h.ctx, h.merchant, id)
		if err != nil || c.Status != charge.StatusSucceeded || c.ProcessorRef != e.Intent.ID {
			t.Fatalf("charge: got %+v, %v; want succeeded with its PaymentIntent", c, err)
		}
		if ev := h.lastCheck(t, id).Evidence.Event; ev == nil || ev.ID != e.ID {
			t.Fatalf("evidence: got event %+v, want %s", ev, e.ID)
		}
		// Settled: a later event changes nothing.
		before = h.reads.total()
		if chk, err := h.j.CheckEvent(h.ctx, id, h.event(reconcile.EventSucceeded, e.Intent)); err != nil || chk.N != 0 {
			t.Fatalf("settled charge: got check %d, %v; want none", chk.N, err)
		}
		if n := h.reads.total() - before; n != 0 {
			t.Fatalf("reads for a settled charge: got %d, want none", n)
		}
	})

	for _, tc := range []struct {
		name       string
		change     func(e *reconcile.Event)
		wantReason reconcile.Reason
	}{
		{"amount and currency differ", func(e *reconcile.Event) { e.Intent.Amount, e.Intent.Currency = 1, "eur" }, reconcile.ReasonEventMismatch},
		{"another account", func(e *reconcile.Event) { e.Account = "acct_other" }, reconcile.ReasonEventOtherAccount},
		{"a PaymentIntent the processor does not know", func(e *reconcile.Event) { e.Intent.ID = "pi_none" }, reconcile.ReasonEventNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := h.pending(t, "pm_card_visa")
			e := h.event(reconcile.EventSucceeded, h.paid(t, id))
			tc.change(&e)
			if _, err := h.j.CheckEvent(h.ctx, id, e); err != nil {
				t.Fatal(err)
			}
			st := h.state(t, id)
			if st.status != charge.StatusPending || !st.inReview {
				t.Fatalf("charge: got %+v, want pending in review", st)
			}
			chk := h.lastCheck(t, id)
			if chk.Decision.Reason != tc.wantReason || chk.Evidence.Event == nil || chk.Evidence.Event.ID != e.ID {
				t.Fatalf("check: got reason %s event %+v, want %s with the event attached", chk.Decision.Reason, chk.Evidence.Event, tc.wantReason)
			}
			c, err := h.db.Charge(h.ctx, h.merchant, id)
			if err != nil || c.ProcessorRef != "" {
				t.Fatalf("processor_ref: got %q, %v; want none from conflicting evidence", c.ProcessorRef, err)
			}
		})
	}

	t.Run("still processing", func(t *testing.T) {
		id := h.pending(t, "pm_card_visa")
		e := h.event(reconcile.EventSucceeded, h.paid(t, id))
		h.setStatus(t, id, charge.StatusProcessing)
		if _, err := h.j.CheckEvent(h.ctx, id, e); !errors.Is(err, reconcile.ErrChargeProcessing) {
			t.Fatalf("got %v, want reconcile.ErrChargeProcessing", err)
		}
		h.setStatus(t, id, charge.StatusPending)
		if chk, err := h.j.CheckEvent(h.ctx, id, e); err != nil || chk.Decision.Kind != reconcile.KindResolve {
			t.Fatalf("once pending: got %+v, %v; want resolved", chk.Decision, err)
		}
	})
}

// TestUnknownChargeEventInReview: an event about a charge paygate does not have waits in
// review itself, with the event as received; it outlives the retention of event ids.
func TestUnknownChargeEventInReview(t *testing.T) {
	t.Parallel()
	h := setupHooks(t)
	id := h.pending(t, "pm_card_visa")
	in := h.paid(t, id)
	in.ChargeID = "ch_unknown" + charge.NewID()
	e := h.event(reconcile.EventSucceeded, in)
	if seen, err := h.recv.Receive(h.ctx, e); err != nil || seen {
		t.Fatalf("Receive: got seen %v, %v", seen, err)
	}
	find := func() *reconcile.EventInReview {
		t.Helper()
		evs, err := h.db.WebhookEventsInReview(h.ctx, 10000)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range evs {
			if r.ID == e.ID {
				return &r
			}
		}
		return nil
	}
	got := find()
	if got == nil || got.Disposition != reconcile.DispositionUnknownCharge || got.ChargeID != in.ChargeID || got.Account != h.account {
		t.Fatalf("events in review: got %+v, want %s", got, e.ID)
	}
	var kept reconcile.Event
	if err := json.Unmarshal(got.Event, &kept); err != nil || kept.ID != e.ID || kept.Intent.ID != in.ID || kept.Intent.Amount != in.Amount {
		t.Fatalf("the event kept: got %+v, %v; want the event as received", kept, err)
	}
	if _, err := h.db.ReapWebhookEvents(h.ctx, -time.Second); err != nil {
		t.Fatal(err)
	}
	if find() == nil {
		t.Fatal("the event in review was reaped")
	}
}

// TestSettledChargeConflictingEvent: an event that contradicts a settled charge (another
// account, another PaymentIntent carrying its id) is conflicting evidence: its check puts the
// charge in the review queue with the event, and leaves its status as it is.
func TestSettledChargeConflictingEvent(t *testing.T) {
	t.Parallel()
	h := setupHooks(t)
	settled := func(t *testing.T) (string, processor.Intent) {
		id := h.pending(t, "pm_card_visa")
		in := h.paid(t, id)
		if _, err := dbtest.Pool(t).Exec(h.ctx, `UPDATE charges SET status = 'succeeded', live = true, processor_ref = $2 WHERE id = $1`, id, in.ID); err != nil {
			t.Fatal(err)
		}
		return id, in
	}
	for _, tc := range []struct {
		name       string
		event      func(t *testing.T, id string, in processor.Intent) reconcile.Event
		wantReason reconcile.Reason
	}{
		{"another account", func(t *testing.T, _ string, in processor.Intent) reconcile.Event {
			e := h.event(reconcile.EventSucceeded, in)
			e.Account = "acct_other"
			return e
		}, reconcile.ReasonEventOtherAccount},
		{"a second PaymentIntent carrying its id", func(t *testing.T, id string, _ processor.Intent) reconcile.Event {
			a := h.proc.CreatePayment(h.ctx, processor.PaymentParams{Key: "other-key-" + id, ChargeID: id,
				Amount: 1000, Currency: "usd", PaymentMethod: "pm_card_visa"})
			in, res := h.proc.Retrieve(h.ctx, a.PaymentIntent)
			if !res.Answered() {
				t.Fatalf("the second PaymentIntent: %+v", res)
			}
			return h.event(reconcile.EventSucceeded, in)
		}, reconcile.ReasonDuplicate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, in := settled(t)
			e := tc.event(t, id, in)
			if _, err := h.recv.Receive(h.ctx, e); err != nil {
				t.Fatal(err)
			}
			if d, err := h.db.WebhookEventDisposition(h.ctx, e.ID); err != nil || d != reconcile.DispositionConflict {
				t.Fatalf("disposition: got %q, %v; want %s", d, err, reconcile.DispositionConflict)
			}
			if n := h.queued(t, id); n != 1 {
				t.Fatalf("checks enqueued: got %d, want 1", n)
			}
			if _, err := h.j.CheckEvent(h.ctx, id, e); err != nil {
				t.Fatal(err)
			}
			st := h.state(t, id)
			if st.status != charge.StatusSucceeded || !st.inReview {
				t.Fatalf("charge: got %+v, want succeeded, in review", st)
			}
			chk := h.lastCheck(t, id)
			if chk.Decision.Reason != tc.wantReason || chk.Evidence.Event == nil || chk.Evidence.Event.ID != e.ID {
				t.Fatalf("check: got reason %s, event %+v; want %s with the event", chk.Decision.Reason, chk.Evidence.Event, tc.wantReason)
			}
			q, err := h.db.ReviewQueue(h.ctx, h.merchant, 100)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, it := range q {
				found = found || (it.Charge.ID == id && it.Reason == string(tc.wantReason))
			}
			if !found {
				t.Fatalf("review queue: %s not there for %s", id, tc.wantReason)
			}
		})
	}
}
