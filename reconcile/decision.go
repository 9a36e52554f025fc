package reconcile

import (
	"time"

	"github.com/paygate/paygate/processor"
	"github.com/paygate/paygate/retry"
)

// Kind is what a decision does with the charge.
type Kind string

// The kinds of decision.
const (
	// KindResolve: the charge ends with Outcome, proven by the evidence found by Path.
	KindResolve Kind = "resolve"
	// KindPending: nothing settles the charge yet; its state does not change and the next
	// check is at NextCheckAt (none when zero). For a charge an operator resolved, it means
	// the evidence does not contradict the operator.
	KindPending Kind = "pending"
	// KindReview: the charge needs a person, for Reason; it stays pending meanwhile, and is
	// checked again at NextCheckAt when that is set.
	KindReview Kind = "review"
)

// Path is the read (or write) whose answer settled a charge, or found its PaymentIntent.
type Path string

// The resolution paths.
const (
	// PathRetrieve: the PaymentIntent read by its id (the charge's processor_ref).
	PathRetrieve Path = "retrieve"
	// PathList: the PaymentIntent found in the list of the send window by its metadata.
	PathList Path = "list"
	// PathSearch: the PaymentIntent found by the metadata search.
	PathSearch Path = "search"
	// PathReplay: the answer to a replay of the request under the same key.
	PathReplay Path = "replay"
	// PathAbsence: the authoritative absence: the list over the send window found empty
	// twice, at least AbsenceGap apart, after the 24 h rule closed the key.
	PathAbsence Path = "absence"
)

// Reason says why a charge needs a person.
type Reason string

// The review reasons.
const (
	// ReasonOtherAccount: the charge was sent to another processor account than the one
	// the reconciler talks to; nothing is read or written for it there.
	ReasonOtherAccount Reason = "other_account"
	// ReasonDuplicate: more than one PaymentIntent carries the charge id (or one other than
	// the charge's processor_ref does).
	ReasonDuplicate Reason = "duplicate_payment_intents"
	// ReasonMismatch: the charge's PaymentIntent differs from it in amount, currency,
	// customer, payment method or metadata (Decision.Mismatch names the fields).
	ReasonMismatch Reason = "mismatch"
	// ReasonRefNotFound: the processor says the PaymentIntent an earlier answer named does
	// not exist.
	ReasonRefNotFound Reason = "processor_ref_not_found"
	// ReasonUnexpectedStatus: the PaymentIntent is in a state reconciliation does not settle
	// (canceled, or waiting for a payment method without an error).
	ReasonUnexpectedStatus Reason = "unexpected_status"
	// ReasonReplayRefused: the processor refused a replay of the key as invalid (400
	// idempotency_error: the key was used with other parameters; or a stored 4xx).
	ReasonReplayRefused Reason = "replay_refused"
	// ReasonKeyClosedNoEvidence: the 24 h rule has closed the key and no read has found a
	// trace of the charge, while its absence is not yet authoritative. Checks go on: a
	// second empty list at least AbsenceGap later resolves it failed.
	ReasonKeyClosedNoEvidence Reason = "key_closed_no_evidence"
	// ReasonWindowExhausted: the schedule has ended and the charge is still unresolved.
	ReasonWindowExhausted Reason = "window_exhausted"
	// ReasonContradictsManual: processor evidence contradicts an operator's resolution; the
	// charge reopens at the top of the review queue.
	ReasonContradictsManual Reason = "contradicts_manual_resolution"
)

// Decision is what one check decides for a charge. It is JSON-able, and stored with the
// check's evidence.
type Decision struct {
	// Kind is what happens to the charge.
	Kind Kind `json:"kind"`
	// Outcome is the charge's outcome for KindResolve (and, for a review that contradicts
	// an operator, the outcome the processor shows).
	Outcome Outcome `json:"outcome,omitempty"`
	// Path is the read that settled the charge or found its PaymentIntent.
	Path Path `json:"path,omitempty"`
	// Reason is why the charge needs a person (KindReview).
	Reason Reason `json:"reason,omitempty"`
	// PaymentIntent is the charge's PaymentIntent id, when the evidence names one: the
	// store saves it as the charge's processor_ref.
	PaymentIntent string `json:"payment_intent,omitempty"`
	// Status is that PaymentIntent's status.
	Status string `json:"status,omitempty"`
	// PaymentIntents lists every PaymentIntent found, for ReasonDuplicate.
	PaymentIntents []string `json:"payment_intents,omitempty"`
	// Mismatch names the fields that differ, for ReasonMismatch.
	Mismatch []string `json:"mismatch,omitempty"`
	// Decline is the issuer's evidence, for OutcomeDeclined: it feeds the decline rules
	// (network caps, reattempt schedule) as a direct decline does.
	Decline *processor.Decline `json:"decline,omitempty"`
	// AbsentSince is the first of the two empty lists of an authoritative absence.
	AbsentSince time.Time `json:"absent_since,omitzero"`
	// NextCheckAt is when to check the charge again; zero for none.
	NextCheckAt time.Time `json:"next_check_at,omitzero"`
	// Replay says whether the charge's request may be replayed under its key now.
	Replay ReplayVerdict `json:"replay"`
}

// Decide decides what the evidence of one check means for charge c, under policy p. It is
// pure: ev.At is the database clock of the check, c.Checks the earlier checks.
//
// In order: a charge of another account goes to review; two PaymentIntents for the charge
// (or one other than its processor_ref), a processor_ref the processor does not know, or a
// PaymentIntent that does not match the charge's amount, currency, customer, payment method
// and metadata go to review as conflicting evidence. The charge's PaymentIntent settles it:
// succeeded, or declined with its last_payment_error; processing and requires_action leave
// it pending; any other state goes to review. With no PaymentIntent found, a replay's
// answer settles it when it can. With nothing at all, the authoritative absence resolves it
// failed; before that, once the 24 h rule has closed the key, it goes to review while checks
// go on; otherwise it stays pending until the next slot of the schedule, and goes to review
// when the schedule has ended. A charge an operator resolved goes back to review only when
// the evidence contradicts the operator.
func Decide(c Charge, ev Evidence, p Policy) Decision {
	p = p.withDefaults()
	d := decide(c, ev, p)
	if c.Manual != "" {
		d = AgainstManual(c.Manual, d)
	}
	d.Replay = CanReplay(c, ev.Account, ev.At)
	return d
}

func decide(c Charge, ev Evidence, p Policy) Decision {
	now := ev.At
	if c.Account == "" || ev.Account != c.Account {
		return Decision{Kind: KindReview, Reason: ReasonOtherAccount}
	}
	seen := ev.sightings(c.ID)
	if c.ProcessorRef != "" && len(seen) == 1 && seen[0].intent.ID != c.ProcessorRef {
		seen = append([]sighting{{intent: processor.Intent{ID: c.ProcessorRef}, path: PathRetrieve}}, seen...)
	}
	if len(seen) > 1 {
		d := Decision{Kind: KindReview, Reason: ReasonDuplicate, Path: seen[0].path}
		for _, s := range seen {
			d.PaymentIntents = append(d.PaymentIntents, s.intent.ID)
		}
		return d
	}
	if c.ProcessorRef != "" && ev.Retrieve != nil && ev.Retrieve.NotFound {
		return Decision{Kind: KindReview, Reason: ReasonRefNotFound, Path: PathRetrieve, PaymentIntent: c.ProcessorRef}
	}
	if len(seen) == 1 {
		return fromIntent(c, seen[0], now, p)
	}
	if ev.Replay != nil {
		if d, ok := fromReplay(c, *ev.Replay, now, p); ok {
			return d
		}
	}
	if since, ok := authoritativeAbsence(c, ev, p); ok {
		return Decision{Kind: KindResolve, Outcome: OutcomeFailed, Path: PathAbsence, AbsentSince: since}
	}
	if !now.Before(c.KeyClosesAt()) && c.ProcessorRef == "" && !sawBefore(c) {
		next, ok := p.Schedule.Next(c.firstSent(), now)
		if !ok {
			return Decision{Kind: KindReview, Reason: ReasonWindowExhausted}
		}
		return Decision{Kind: KindReview, Reason: ReasonKeyClosedNoEvidence, NextCheckAt: next}
	}
	return pending(c, now, p, Decision{Kind: KindPending})
}

// fromIntent decides from the charge's one PaymentIntent.
func fromIntent(c Charge, s sighting, now time.Time, p Policy) Decision {
	in := s.intent
	d := Decision{Path: s.path, PaymentIntent: in.ID, Status: in.Status}
	if m := mismatch(c, in); len(m) > 0 {
		d.Kind, d.Reason, d.Mismatch = KindReview, ReasonMismatch, m
		return d
	}
	switch in.Status {
	case "succeeded":
		d.Kind, d.Outcome = KindResolve, OutcomeSucceeded
	case "requires_payment_method":
		if in.Decline == nil {
			d.Kind, d.Reason = KindReview, ReasonUnexpectedStatus
			break
		}
		d.Kind, d.Outcome, d.Decline = KindResolve, OutcomeDeclined, in.Decline
	case "processing", "requires_action", "requires_confirmation", "requires_capture":
		// The processor has not finished: check again.
		d.Kind = KindPending
		return pending(c, now, p, d)
	default:
		// canceled, or a state paygate never asks for: no money moved, or nobody knows.
		d.Kind, d.Reason = KindReview, ReasonUnexpectedStatus
	}
	return d
}

// fromReplay decides from a replay's answer when it settles something; ok is false when it
// says nothing.
func fromReplay(c Charge, r ReplayAnswer, now time.Time, p Policy) (Decision, bool) {
	d := Decision{Path: PathReplay, PaymentIntent: r.PaymentIntent, Status: r.Status}
	switch r.Class {
	case retry.ClassSuccess:
		d.Kind, d.Outcome = KindResolve, OutcomeSucceeded
		return d, true
	case retry.ClassDecline:
		d.Kind, d.Outcome, d.Decline = KindResolve, OutcomeDeclined, r.Decline
		if d.Decline == nil {
			d.Decline = &processor.Decline{Code: r.Code}
		}
		return d, true
	case retry.ClassTerminal:
		d.Kind, d.Reason = KindReview, ReasonReplayRefused
		if r.Code == "payment_intent_canceled" {
			d.Reason = ReasonUnexpectedStatus
		}
		return d, true
	}
	if r.PaymentIntent != "" {
		// The processor has the PaymentIntent and has not finished it (or stored an
		// unknown answer): the reads follow it from now on.
		d.Kind = KindPending
		return pending(c, now, p, d), true
	}
	return Decision{}, false
}

// pending completes a decision that leaves the charge pending with the next slot of the
// schedule, or sends it to review when the schedule has ended.
func pending(c Charge, now time.Time, p Policy, d Decision) Decision {
	next, ok := p.Schedule.Next(c.firstSent(), now)
	if !ok {
		d.Kind, d.Reason = KindReview, ReasonWindowExhausted
		return d
	}
	d.NextCheckAt = next
	return d
}

// AgainstManual returns what decision d means for a charge an operator resolved as manual:
// processor evidence of another outcome — or a succeeded PaymentIntent that does not match
// the charge, against a manual failed or declined — reopens it at the top of the review queue
// (ReasonContradictsManual); evidence of the same outcome confirms it; the lack of evidence
// needs no review, the operator has decided. Decide applies it; a Store applies it again to a
// check that ran while an operator resolved the charge. d may have been decided against
// another manual resolution already: its Outcome still says what the processor shows.
func AgainstManual(manual Outcome, d Decision) Decision {
	switch {
	case d.Outcome != "" && d.Outcome != manual:
		d.Kind, d.Reason, d.NextCheckAt = KindReview, ReasonContradictsManual, time.Time{}
	case (manual == OutcomeFailed || manual == OutcomeDeclined) && d.Status == "succeeded":
		// Money moved where an operator said it did not, even if the PaymentIntent does not
		// match the charge: the riskiest case, first in line (its mismatch stays named).
		d.Kind, d.Reason, d.NextCheckAt = KindReview, ReasonContradictsManual, time.Time{}
	case d.Outcome != "":
		d.Kind, d.Reason, d.NextCheckAt = KindPending, "", time.Time{}
	case d.Kind == KindReview && (d.Reason == ReasonKeyClosedNoEvidence || d.Reason == ReasonWindowExhausted):
		d.Kind, d.Reason = KindPending, ""
	}
	return d
}

// sawBefore reports whether an earlier check found a PaymentIntent for the charge.
func sawBefore(c Charge) bool {
	for _, chk := range c.Checks {
		if chk.Evidence.sawPaymentIntent(c.ID) {
			return true
		}
	}
	return false
}
