package reconcile

import (
	"time"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/processor"
)

// Outcome is how a pending charge ends.
type Outcome string

// The outcomes of reconciliation.
const (
	// OutcomeSucceeded: the processor approved the charge.
	OutcomeSucceeded Outcome = "succeeded"
	// OutcomeDeclined: the issuer declined the charge; the decision carries the decline
	// evidence, which feeds the decline rules like a direct decline.
	OutcomeDeclined Outcome = "declined"
	// OutcomeFailed: nothing happened at the processor. Reconciliation decides it only on
	// an authoritative absence; an operator may decide it by hand.
	OutcomeFailed Outcome = "failed"
)

// Charge is what reconciliation knows of one charge whose outcome is unknown: the parameters
// the processor was asked to charge, where and when it was sent, and the checks made so far.
type Charge struct {
	// ID is paygate's charge id, carried in the PaymentIntent's metadata.
	ID string `json:"id"`
	// RootChargeID is the first charge of a reattempt chain, carried in the metadata too;
	// empty for a first charge.
	RootChargeID string `json:"root_charge_id,omitempty"`
	// Amount is in minor units of Currency.
	Amount int64 `json:"amount"`
	// Currency is the lowercase ISO 4217 code.
	Currency string `json:"currency"`
	// Customer is the processor's customer id, empty when none.
	Customer string `json:"customer,omitempty"`
	// PaymentMethod is the processor's payment method id.
	PaymentMethod string `json:"payment_method"`
	// Account is the processor account the charge was sent to. It is the only account
	// queried for it.
	Account string `json:"account"`
	// ProcessorRef is the PaymentIntent id, when an answer gave it.
	ProcessorRef string `json:"processor_ref,omitempty"`
	// CreatedAt is when the charge was created (database clock): no send is earlier.
	CreatedAt time.Time `json:"created_at"`
	// FirstSentAt is when the first recorded attempt was sent (database clock); zero when
	// unknown: CreatedAt stands in. It anchors the check schedule. An earlier send may have
	// gone unrecorded (its process died before recording it), so the 24 h rule and the
	// start of the list window are anchored on the earlier of CreatedAt and FirstSentAt.
	FirstSentAt time.Time `json:"first_sent_at,omitzero"`
	// LastSentAt is when the last attempt was sent; zero means FirstSentAt. It (or a later
	// replay recorded in Checks) ends the list window.
	LastSentAt time.Time `json:"last_sent_at,omitzero"`
	// Written reports that at least one attempt's request was written to the processor in
	// full (an attempt classified anything but not_sent): only then may the processor have
	// seen the key, and only then may it be replayed.
	Written bool `json:"written"`
	// Manual is an operator's resolution of the charge, empty when none. Later processor
	// evidence that contradicts it sends the charge back to review.
	Manual Outcome `json:"manual,omitempty"`
	// Checks are the earlier reconciliation checks of the charge, oldest first.
	Checks []Check `json:"checks,omitempty"`
}

// Check is one reconciliation of one charge: when it ran, what the processor showed and what
// was decided. Checks form the charge's append-only reconciliation trail.
type Check struct {
	// N numbers the charge's checks from 1; the store records each number once, so two
	// reconcilers racing for one charge record one check.
	N int `json:"n"`
	// At is the database clock when the check started.
	At time.Time `json:"at"`
	// Manual is the operator's resolution the check was decided against, empty when none:
	// the store compares it with the charge's under its lock, so that a resolution made
	// while the check ran is never silently overwritten.
	Manual Outcome `json:"manual,omitempty"`
	// Decision is what the check decided.
	Decision Decision `json:"decision"`
	// Evidence is what the reads (and a replay) found.
	Evidence Evidence `json:"evidence"`
}

// Looked reports whether the check looked at the processor and so may leave the charge to an
// operator when it settles nothing: at least one read was answered (Evidence.Answered). A
// charge of another processor account cannot be read here at all, and its check counts as
// looked: no check here can ever do better, and an operator reads that account instead.
func (c Check) Looked() bool {
	return c.Evidence.Answered() || c.Decision.Reason == ReasonOtherAccount
}

// firstSent is when the key was first used by a recorded attempt: FirstSentAt, else
// CreatedAt. It anchors the check schedule.
func (c Charge) firstSent() time.Time {
	if !c.FirstSentAt.IsZero() {
		return c.FirstSentAt
	}
	return c.CreatedAt
}

// earliestSend is the earliest time the key may have been used: the earlier of CreatedAt and
// FirstSentAt (whichever is known). A send is never earlier than the charge's creation, but it
// may be earlier than the recorded FirstSentAt: a process that sent the request and died
// before recording it leaves first_sent_at to a later, resumed attempt. It anchors the 24 h
// rule and opens the list window.
func (c Charge) earliestSend() time.Time {
	if !c.CreatedAt.IsZero() && c.CreatedAt.Before(c.firstSent()) {
		return c.CreatedAt
	}
	return c.firstSent()
}

// lastSent is when the key was last used: the latest of LastSentAt, the first send and the
// checks that replayed it (a replay is sent within its check, well inside the list window's
// margin after the check's start).
func (c Charge) lastSent() time.Time {
	last := c.firstSent()
	if c.LastSentAt.After(last) {
		last = c.LastSentAt
	}
	for _, chk := range c.Checks {
		if chk.Evidence.Replay != nil && chk.Evidence.At.After(last) {
			last = chk.Evidence.At
		}
	}
	return last
}

// KeyClosesAt is when the 24 h rule closes the charge's processor key: the earliest possible
// first send (the earlier of CreatedAt and FirstSentAt) plus processor.KeyWindow. From then
// on, no write under the key: reads only, then review.
func (c Charge) KeyClosesAt() time.Time { return processor.KeyClosesAt(c.earliestSend()) }

// nextCheckNumber is the number of the check that follows the charge's recorded ones.
func (c Charge) nextCheckNumber() int {
	if len(c.Checks) == 0 {
		return 1
	}
	return max(c.Checks[len(c.Checks)-1].N, len(c.Checks)) + 1
}

// Target is a charge to check, as the store reads it: what reconciliation knows of it, with
// its merchant and its status.
type Target struct {
	Charge     Charge
	MerchantID string
	Status     charge.Status
}
