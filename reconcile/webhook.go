package reconcile

import (
	"context"
	"fmt"
	"time"

	"github.com/paygate/paygate/processor"
)

// Event is a processor event about a PaymentIntent (a payment_intent.* webhook whose signature
// was verified): evidence that the PaymentIntent changed, which a check confirms with a read of
// it. What the payload says is never proof of the PaymentIntent's state.
type Event struct {
	// ID is the processor's event id (evt_...).
	ID string `json:"id"`
	// Type is the event type (payment_intent.succeeded, ...).
	Type string `json:"type"`
	// Created is when the processor created the event.
	Created time.Time `json:"created"`
	// Account is the processor account the event names; empty when it names none (Stripe
	// names it for the events of connected accounts).
	Account string `json:"account,omitempty"`
	// ReceivedAt is when paygate received the event.
	ReceivedAt time.Time `json:"received_at"`
	// Intent is the PaymentIntent as the event's payload shows it.
	Intent processor.Intent `json:"intent"`
}

// The event types that announce a final state of a PaymentIntent.
const (
	EventSucceeded     = "payment_intent.succeeded"
	EventPaymentFailed = "payment_intent.payment_failed"
	EventCanceled      = "payment_intent.canceled"
)

// Final reports whether the event announces a final state of its PaymentIntent (succeeded,
// payment_failed, canceled): a read of it now settles its charge or shows a conflict. Other
// events (created, processing, requires_action, ...) announce a PaymentIntent that has not
// finished: a final event follows.
func (e Event) Final() bool {
	switch e.Type {
	case EventSucceeded, EventPaymentFailed, EventCanceled:
		return true
	}
	return false
}

// The review reasons of events that conflict with their charge.
const (
	// ReasonEventOtherAccount: the event comes from another processor account than the
	// charge's; nothing is read for it.
	ReasonEventOtherAccount Reason = "event_other_account"
	// ReasonEventMismatch: the event's PaymentIntent differs from the charge it names in
	// amount, currency, customer, payment method or metadata (Decision.Mismatch names the
	// fields).
	ReasonEventMismatch Reason = "event_mismatch"
	// ReasonEventNotFound: the processor says the PaymentIntent the event names does not
	// exist.
	ReasonEventNotFound Reason = "event_payment_intent_not_found"
)

// ReconcileEvent runs one check of charge c triggered by event e: it reads the PaymentIntent
// the event names — the charge's processor_ref when it has one, else the event's — by id, one
// read, and decides from what the read shows (DecideEvent), with the event attached to the
// check's evidence. A charge of another account than the processor's, or an event of another
// account than the charge's, is not read. The account is confirmed before and after the read,
// the check recorded and returned, and errors are those of Reconcile.
func (r *Reconciler) ReconcileEvent(ctx context.Context, c Charge, e Event) (Check, error) {
	now := r.now()
	chk := Check{N: c.nextCheckNumber(), At: now, Manual: c.Manual}
	account, err := r.confirm(ctx)
	if err != nil {
		return Check{}, fmt.Errorf("reconcile: charge %s: %w", c.ID, err)
	}
	ev := Evidence{At: now, Account: account, Event: &e}
	if c.Account == account && (e.Account == "" || e.Account == c.Account) {
		id := c.ProcessorRef
		if id == "" {
			id = e.Intent.ID
		}
		if ev.Retrieve, err = r.retrieve(ctx, c, id); err != nil {
			return Check{}, err
		}
		after, err := r.confirm(ctx)
		if err != nil {
			return Check{}, fmt.Errorf("reconcile: charge %s: after the read: %w", c.ID, err)
		}
		if after != account {
			return Check{}, fmt.Errorf("reconcile: charge %s: %w: it changed from %s to %s during the check",
				c.ID, processor.ErrAccountUnconfirmed, account, after)
		}
	}
	chk.Evidence = ev
	chk.Decision = DecideEvent(c, ev, r.policy)
	if err := r.record(ctx, c, chk); err != nil {
		return chk, fmt.Errorf("reconcile: charge %s: record check %d: %w", c.ID, chk.N, err)
	}
	r.logDecision(c, chk)
	return chk, nil
}

// retrieve reads PaymentIntent id for charge c, at the read rate. A failed read is evidence;
// only ctx ending (or the limiter refusing) is an error.
func (r *Reconciler) retrieve(ctx context.Context, c Charge, id string) (*Retrieval, error) {
	if err := r.wait(ctx, r.readLimit, "retrieve"); err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, r.readTimeout)
	in, res := r.reads.Retrieve(rctx, id)
	cancel()
	ret := &Retrieval{ID: id}
	switch {
	case res.Answered() && res.NotFound:
		ret.NotFound = true
	case res.Answered():
		ret.Intent = &in
	default:
		ret.Failure = failureOf(res)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("reconcile: charge %s: retrieve: %w", c.ID, err)
	}
	return ret, nil
}

// DecideEvent decides what a check triggered by an event means for charge c: what the read
// shows decides, as Decide does, unless the event conflicts with the charge, which then goes
// to review as conflicting evidence from a read does (no further check is scheduled; a
// person looks): an event of another processor account than the charge's; one naming another
// PaymentIntent than the charge's processor_ref (two PaymentIntents for one charge); one whose
// PaymentIntent differs from the charge (amount, currency, customer, payment method, metadata);
// one naming a PaymentIntent the processor does not know. A conflict the read already showed
// keeps the read's reason; a review for want of evidence (the 24 h rule closed the key, the
// schedule ended) gives way to the event's conflict. Against an operator's resolution, AgainstManual applies as in
// Decide. It is pure.
func DecideEvent(c Charge, ev Evidence, p Policy) Decision {
	d := Decide(c, ev, p)
	if ev.Event == nil || (d.Kind == KindReview && d.Reason != ReasonKeyClosedNoEvidence && d.Reason != ReasonWindowExhausted) {
		// A conflict the read showed stands; a review for want of evidence gives way to the
		// event's conflict, which is evidence.
		return d
	}
	conflict, ok := eventConflict(c, ev)
	if !ok {
		return d
	}
	// What the read showed stays in the decision, for AgainstManual and the review queue.
	conflict.PaymentIntent, conflict.Status, conflict.Replay = d.PaymentIntent, d.Status, d.Replay
	if conflict.Path == "" {
		conflict.Path = d.Path
	}
	if c.Manual != "" {
		conflict = AgainstManual(c.Manual, conflict)
	}
	return conflict
}

// eventConflict returns the review decision an event that conflicts with charge c calls for;
// ok is false when it does not conflict.
func eventConflict(c Charge, ev Evidence) (Decision, bool) {
	e := ev.Event
	switch {
	case e.Account != "" && e.Account != c.Account:
		return Decision{Kind: KindReview, Reason: ReasonEventOtherAccount}, true
	case c.ProcessorRef != "" && e.Intent.ID != c.ProcessorRef:
		return Decision{Kind: KindReview, Reason: ReasonDuplicate, Path: PathRetrieve,
			PaymentIntents: []string{c.ProcessorRef, e.Intent.ID}}, true
	}
	if m := mismatch(c, e.Intent); len(m) > 0 {
		return Decision{Kind: KindReview, Reason: ReasonEventMismatch, Mismatch: m}, true
	}
	if c.ProcessorRef == "" && ev.Retrieve != nil && ev.Retrieve.NotFound {
		return Decision{Kind: KindReview, Reason: ReasonEventNotFound, Path: PathRetrieve}, true
	}
	return Decision{}, false
}
