package reconcile

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/decline"
)

// Actor is who the audit trail names for what reconciliation records.
const Actor = "reconciler"

// ReasonDuplicatePayment is the review reason of a charge found paid while another live
// charge holds its reference, or another charge of its reattempt chain is live: two payments
// for one order, one to refund.
const ReasonDuplicatePayment = "duplicate_payment"

// CodeAbsentAtProcessor is the failure code of a charge reconciliation resolved failed on
// an authoritative absence: the processor holds nothing under its key.
const CodeAbsentAtProcessor = "not_found_at_processor"

// StandingQuery names what the store reads before it records a check of a charge.
type StandingQuery struct {
	ChargeID string
	// CardHistory asks for the card's history: a decline is judged on it.
	CardHistory bool
}

// Standing is where a charge stands when a check of it is recorded, as the store reads it
// under the charge's lock.
type Standing struct {
	// Charge is the charge as it is now.
	Charge *charge.Charge
	// Manual is an operator's resolution of the charge, empty when none.
	Manual Outcome
	// InReview, ReviewReason, ReviewRank and ReviewSince are the charge's place in the
	// review queue.
	InReview     bool
	ReviewReason string
	ReviewRank   int
	ReviewSince  *time.Time
	// History is the card's history without the charge's own attempt, and HistoryAt when it
	// records that attempt: read when the query asks.
	History   decline.History
	HistoryAt time.Time
	// Holders are the other live charges that hold the charge's reference and a place in its
	// reattempt chain (see charge.Revived).
	Holders charge.Duplicates
	// Earlier are the payments on the card that may be the first of the charge's order, read
	// with the card's history (see charge.PossibleDuplicate).
	Earlier []charge.Payment
}

// CheckPlan is what recording one check writes, decided by PlanCheck on the charge's
// Standing; the store applies it.
type CheckPlan struct {
	// Check is the check as recorded, and Body its JSON, stored with it.
	Check Check
	Body  json.RawMessage
	// ProcessorRef becomes the charge's processor_ref when it has none; empty: none.
	ProcessorRef string
	// NextCheckAt schedules the next check; zero for none.
	NextCheckAt time.Time
	// Review puts (or keeps) the charge in the review queue, with ReviewReason, at
	// ReviewRank (1: first in line), in the queue since ReviewSince.
	Review       bool
	ReviewReason string
	ReviewRank   int
	ReviewSince  *time.Time
	// Inconclusive marks a check that looked at the processor and settled nothing: an
	// operator may resolve the charge by hand after it.
	Inconclusive bool
	// EndManual ends the operator's resolution of the charge (it is reopened).
	EndManual bool
	// Resolve, when set, changes the charge's status.
	Resolve *Resolution
	// Events are appended to the charge's audit trail, in order.
	Events []charge.Event
}

// Resolution is a change of a charge's status that a check (or an operator) proved.
type Resolution struct {
	Status charge.Status
	// Decline is the decline block of a declined charge.
	Decline json.RawMessage
	// Failure is the failure of a failed charge.
	Failure *charge.Failure
	// Card is the outcome for the card's history; nil drops its attempt's outcome.
	Card *charge.CardOutcome
	// Reopen puts a resolved charge back to pending: evidence contradicts its resolution.
	Reopen bool
	// Duplicates are the live charges the charge duplicates, brought back to life.
	Duplicates charge.Duplicates
}

// PlanCheck decides what recording check chk of a charge changes, on the charge's standing s,
// with the decline rules' caps. It is pure.
//
// A check never silently overwrites a resolution: when the charge was resolved after the
// check read it (by an operator, or by its own run), the check is recorded as its decision
// stands against that resolution (AgainstManual). Evidence against a resolution reopens the
// charge, first in line in the review queue, and ends the operator's resolution. A charge
// proven paid while it duplicates a live charge goes first in line (ReasonDuplicatePayment).
// A charge in review at a higher rank keeps its place until a check or an operator resolves
// it.
func PlanCheck(chk Check, s Standing, caps decline.Caps) (CheckPlan, error) {
	c := s.Charge
	if settled := settledOutcome(c.Status, s.Manual); settled != "" && settled != chk.Manual {
		chk.Decision, chk.Manual = AgainstManual(settled, chk.Decision), settled
	}
	d := chk.Decision
	p := CheckPlan{Check: chk, NextCheckAt: d.NextCheckAt}
	// A PaymentIntent becomes the charge's processor_ref only when it is the charge's: one
	// that does not match it (even when it reopens an operator's resolution), or one of
	// several, is evidence for a person, not a reference to show the merchant or to read by
	// from now on.
	if ownPaymentIntent(d) {
		p.ProcessorRef = d.PaymentIntent
	}
	switch d.Kind {
	case KindResolve:
		p.Resolve = resolution(d, s, chk.At, caps)
	case KindReview:
		p.Review, p.ReviewReason = true, string(d.Reason)
		if d.Reason == ReasonContradictsManual {
			// Evidence against a resolution: the charge is reopened, back to pending (its
			// card attempt too), first in line.
			p.ReviewRank = 1
			p.Resolve = &Resolution{Status: charge.StatusPending, Reopen: true, Card: &charge.CardOutcome{Outcome: decline.Pending}}
		}
	}
	var possible *charge.Review
	if res := p.Resolve; res != nil && res.Status == charge.StatusDeclined && res.Card != nil {
		// A decline the issuer gave as a duplicate of a recent transaction: the order may be
		// paid already, and a person confirms it.
		if possible = charge.PossibleDuplicate(c, res.Card.Hold, s.Earlier, true); possible != nil {
			p.Review, p.ReviewReason = true, possible.Reason
		}
	}
	if duplicate(c) && p.Resolve != nil && p.Resolve.Status == charge.StatusSucceeded {
		// A second payment for one order, now proven: it stays first in line until a person
		// refunds one and resolves it.
		p.Review, p.ReviewReason, p.ReviewRank = true, ReasonDuplicatePayment, 1
	}
	if p.Resolve == nil && s.InReview && s.ReviewRank > p.ReviewRank {
		// A reopened charge stays first in line until something resolves it.
		p.Review, p.ReviewReason, p.ReviewRank = true, s.ReviewReason, s.ReviewRank
	}
	p.queuePlace(s, chk.At)
	// A check that settled nothing lets an operator resolve the charge only if it looked at
	// the processor: one whose every read failed proves nothing.
	p.Inconclusive = p.Resolve == nil && chk.Looked()
	p.EndManual = p.Resolve != nil && p.Resolve.Reopen
	body, err := json.Marshal(chk)
	if err != nil {
		return CheckPlan{}, fmt.Errorf("reconcile: check body: %w", err)
	}
	p.Body = body
	p.trail(s, d)
	if possible != nil && p.Resolve != nil {
		p.Events = append(p.Events, charge.Event{Actor: Actor, Action: "review", Reason: possible.Reason,
			StatusBefore: string(p.Resolve.Status), StatusAfter: string(p.Resolve.Status), Evidence: possible.Evidence})
	}
	return p, nil
}

// resolution is the change of status decision d proves for the charge of s, at the check's
// time at.
func resolution(d Decision, s Standing, at time.Time, caps decline.Caps) *Resolution {
	res := &Resolution{Status: charge.Status(d.Outcome)}
	switch d.Outcome {
	case OutcomeSucceeded:
		res.Card = &charge.CardOutcome{Outcome: decline.Approved}
	case OutcomeDeclined:
		// A decline found later feeds the network rules as a direct one.
		res.Decline, res.Card = charge.DeclineOutcome(s.Charge, d.Decline, s.History, s.HistoryAt, at, caps)
	case OutcomeFailed:
		// An authoritative absence: the processor holds nothing under the key.
		res.Failure = &charge.Failure{Code: CodeAbsentAtProcessor, Retryable: false}
	}
	return res
}

// queuePlace sets the plan's place in the review queue from the charge's: a charge already
// in review keeps its higher rank and the time it entered the queue.
func (p *CheckPlan) queuePlace(s Standing, at time.Time) {
	switch {
	case !p.Review:
		p.ReviewReason, p.ReviewRank, p.ReviewSince = "", 0, nil
	case s.InReview:
		p.ReviewRank, p.ReviewSince = max(p.ReviewRank, s.ReviewRank), s.ReviewSince
	default:
		p.ReviewSince = &at
	}
}

// trail sets the plan's audit events, and drops a resolution that a charge not pending may
// not take: a charge an operator resolved stays resolved until evidence contradicts it.
func (p *CheckPlan) trail(s Standing, d Decision) {
	c, status := s.Charge, s.Charge.Status
	review := charge.Event{Actor: Actor, Action: "review", Reason: p.ReviewReason, StatusBefore: string(status),
		StatusAfter: string(status), Evidence: p.Body}
	switch {
	case p.Review && status != charge.StatusPending && !p.EndManual:
		p.Resolve, p.Events = nil, []charge.Event{review}
	case p.Resolve == nil && p.Review:
		p.Events = []charge.Event{review}
	case p.Resolve != nil:
		res := p.Resolve
		// A charge brought back to life (reopened, or found succeeded) while another live
		// charge took its reference, or another charge of its reattempt chain is live, is a
		// duplicate that happened: it names the other charge.
		res.Duplicates = charge.Revived(c, status, res.Status, s.Holders)
		p.Events = res.Duplicates.Events(Actor, status, res.Status)
		ev := charge.Event{Actor: Actor, Action: "resolved", Reason: string(d.Path), StatusBefore: string(status),
			StatusAfter: string(res.Status), Evidence: p.Body}
		if res.Reopen {
			ev.Action, ev.Reason = "reopened", p.ReviewReason
		}
		p.Events = append(p.Events, ev)
	}
}

// ownPaymentIntent reports whether the PaymentIntent of decision d is the charge's own, to
// save as its processor_ref: not one that differs from the charge (d.Mismatch names the
// fields, and stays named when the decision is reread against an operator's resolution), nor
// one of several.
func ownPaymentIntent(d Decision) bool {
	return d.PaymentIntent != "" && d.Reason != ReasonMismatch && d.Reason != ReasonDuplicate &&
		len(d.Mismatch) == 0 && len(d.PaymentIntents) == 0
}

// duplicate reports whether c is marked as a duplicate of a live charge.
func duplicate(c *charge.Charge) bool {
	return c.ReferenceDuplicateOf != "" || c.ReattemptDuplicateOf != ""
}

// settledOutcome is the resolution a check must not overwrite: the operator's, else the
// charge's final status (empty for a charge still pending or processing).
func settledOutcome(status charge.Status, manual Outcome) Outcome {
	switch {
	case manual != "":
		return manual
	case status.Final():
		return Outcome(status)
	}
	return ""
}
