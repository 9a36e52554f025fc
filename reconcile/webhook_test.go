package reconcile

import (
	"reflect"
	"testing"
	"time"

	"github.com/paygate/paygate/processor"
)

// eventFor is a verified event of type typ about in, from the charge's account.
func eventFor(typ string, in processor.Intent) *Event {
	return &Event{ID: "evt_1", Type: typ, Created: t0.Add(2 * time.Second), Account: testAccount,
		ReceivedAt: t0.Add(3 * time.Second), Intent: in}
}

func TestDecideEvent(t *testing.T) {
	t.Parallel()
	succeeded := intentFor("pi_1", "succeeded")
	declined := intentFor("pi_1", "requires_payment_method")
	declined.Decline = declineEvidence
	retrieved := func(in processor.Intent) *Retrieval { return &Retrieval{ID: in.ID, Intent: &in} }
	withRef := func(c *Charge) { c.ProcessorRef = "pi_1" }
	manualFailed := func(c *Charge) { c.Manual = OutcomeFailed }
	otherAmount := succeeded
	otherAmount.Amount, otherAmount.Currency = 100, "eur"

	for _, tc := range []struct {
		name   string
		charge func(*Charge)
		event  *Event
		read   *Retrieval // nil: no read made
		want   Decision
	}{
		{"the read settles succeeded", nil, eventFor(EventSucceeded, succeeded), retrieved(succeeded),
			Decision{Kind: KindResolve, Outcome: OutcomeSucceeded, Path: PathRetrieve, PaymentIntent: "pi_1", Status: "succeeded"}},
		{"the read settles declined", nil, eventFor(EventPaymentFailed, declined), retrieved(declined),
			Decision{Kind: KindResolve, Outcome: OutcomeDeclined, Path: PathRetrieve, PaymentIntent: "pi_1",
				Status: "requires_payment_method", Decline: declineEvidence}},
		{"the payload alone never settles: the read says processing", nil, eventFor(EventSucceeded, succeeded),
			retrieved(intentFor("pi_1", "processing")),
			Decision{Kind: KindPending, Path: PathRetrieve, PaymentIntent: "pi_1", Status: "processing", NextCheckAt: t0.Add(5 * time.Minute)}},
		{"the read failed: the schedule goes on", nil, eventFor(EventSucceeded, succeeded),
			&Retrieval{ID: "pi_1", Failure: &ReadFailure{Class: "retry", HTTPStatus: 503}},
			Decision{Kind: KindPending, NextCheckAt: t0.Add(5 * time.Minute)}},
		{"a charge with its processor_ref", withRef, eventFor(EventSucceeded, succeeded), retrieved(succeeded),
			Decision{Kind: KindResolve, Outcome: OutcomeSucceeded, Path: PathRetrieve, PaymentIntent: "pi_1", Status: "succeeded"}},
		{"another account: not read, review", nil, func() *Event { e := eventFor(EventSucceeded, succeeded); e.Account = "acct_other"; return e }(), nil,
			Decision{Kind: KindReview, Reason: ReasonEventOtherAccount}},
		{"amount and currency differ", nil, eventFor(EventSucceeded, otherAmount), retrieved(succeeded),
			Decision{Kind: KindReview, Reason: ReasonEventMismatch, Mismatch: []string{"amount", "currency"},
				Path: PathRetrieve, PaymentIntent: "pi_1", Status: "succeeded"}},
		{"the read differs too: the read's reason", nil, eventFor(EventSucceeded, otherAmount), retrieved(otherAmount),
			Decision{Kind: KindReview, Reason: ReasonMismatch, Mismatch: []string{"amount", "currency"},
				Path: PathRetrieve, PaymentIntent: "pi_1", Status: "succeeded"}},
		{"another PaymentIntent than the processor_ref", withRef, eventFor(EventSucceeded, intentFor("pi_2", "succeeded")), retrieved(succeeded),
			Decision{Kind: KindReview, Reason: ReasonDuplicate, Path: PathRetrieve, PaymentIntents: []string{"pi_1", "pi_2"},
				PaymentIntent: "pi_1", Status: "succeeded"}},
		{"a PaymentIntent the processor does not know", nil, eventFor(EventSucceeded, succeeded), &Retrieval{ID: "pi_1", NotFound: true},
			Decision{Kind: KindReview, Reason: ReasonEventNotFound, Path: PathRetrieve}},
		{"a success against a manual failed reopens", manualFailed, eventFor(EventSucceeded, succeeded), retrieved(succeeded),
			Decision{Kind: KindReview, Reason: ReasonContradictsManual, Outcome: OutcomeSucceeded, Path: PathRetrieve,
				PaymentIntent: "pi_1", Status: "succeeded"}},
		{"a mismatching success against a manual failed reopens", manualFailed, eventFor(EventSucceeded, otherAmount), retrieved(succeeded),
			Decision{Kind: KindReview, Reason: ReasonContradictsManual, Outcome: OutcomeSucceeded, Path: PathRetrieve,
				PaymentIntent: "pi_1", Status: "succeeded"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := pendingCharge()
			if tc.charge != nil {
				tc.charge(&c)
			}
			ev := evidenceAt(30 * time.Second)
			ev.Event, ev.Retrieve = tc.event, tc.read
			got := DecideEvent(c, ev, Policy{})
			got.Replay = ReplayVerdict{}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestEventFinal(t *testing.T) {
	t.Parallel()
	for typ, want := range map[string]bool{
		EventSucceeded: true, EventPaymentFailed: true, EventCanceled: true,
		"payment_intent.created": false, "payment_intent.processing": false, "payment_intent.requires_action": false,
		"charge.succeeded": false, "": false,
	} {
		if got := (Event{Type: typ}).Final(); got != want {
			t.Errorf("Event{Type: %q}.Final(): got %v, want %v", typ, got, want)
		}
	}
}

// TestDecideEventAfterKeyClosed: after the 24 h rule closed the key, an event that conflicts
// with the charge sends it to review for the conflict, not for the want of evidence.
func TestDecideEventAfterKeyClosed(t *testing.T) {
	t.Parallel()
	c := pendingCharge()
	other := eventFor(EventSucceeded, intentFor("pi_1", "succeeded"))
	other.Account = "acct_other"
	ev := evidenceAt(25 * time.Hour)
	if d := Decide(c, ev, Policy{}); d.Reason != ReasonKeyClosedNoEvidence {
		t.Fatalf("without the event: got %+v, want review %s", d, ReasonKeyClosedNoEvidence)
	}
	ev.Event = other
	if d := DecideEvent(c, ev, Policy{}); d.Kind != KindReview || d.Reason != ReasonEventOtherAccount {
		t.Fatalf("with the event: got %+v, want review %s", d, ReasonEventOtherAccount)
	}
}

// TestEventConflicts: an event contradicts its charge at face value when it names another
// account, another PaymentIntent than the charge's known one, another amount or currency.
func TestEventConflicts(t *testing.T) {
	t.Parallel()
	c := EventCharge{Found: true, Account: testAccount, Amount: 1999, Currency: "usd"}
	withRef := c
	withRef.ProcessorRef = "pi_1"
	in := processor.Intent{ID: "pi_1", Amount: 1999, Currency: "USD"}
	event := func(change func(*Event)) Event {
		e := Event{Account: testAccount, Intent: in}
		if change != nil {
			change(&e)
		}
		return e
	}
	for _, tc := range []struct {
		name string
		c    EventCharge
		e    Event
		want bool
	}{
		{"the charge's own", c, event(nil), false},
		{"the charge's own, its PaymentIntent known", withRef, event(nil), false},
		{"no account named", c, event(func(e *Event) { e.Account = "" }), false},
		{"another account", c, event(func(e *Event) { e.Account = "acct_other" }), true},
		{"another PaymentIntent than the known one", withRef, event(func(e *Event) { e.Intent.ID = "pi_2" }), true},
		{"a PaymentIntent while none is known", c, event(func(e *Event) { e.Intent.ID = "pi_2" }), false},
		{"another amount", c, event(func(e *Event) { e.Intent.Amount = 1 }), true},
		{"another currency", c, event(func(e *Event) { e.Intent.Currency = "eur" }), true},
	} {
		if got := tc.c.Conflicts(tc.e); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
