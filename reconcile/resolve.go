package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/decline"
)

// ErrReconcileFirst is returned by a manual resolution when no reconciliation check in the
// recent window found nothing conclusive, or the last one ran while an attempt could still
// execute: the processor must be asked (again) first.
var ErrReconcileFirst = errors.New("reconcile: a recent reconciliation must have found nothing conclusive")

// ErrNotResolvable is returned by a manual resolution of a charge that has an outcome and is
// not in review.
var ErrNotResolvable = errors.New("reconcile: the charge is neither pending nor in review")

// ErrDeclineStands is returned by a manual resolution of a charge in review as a possible
// duplicate payment (charge.ReasonPossibleDuplicate) as anything but declined: the
// processor declined it, and a resolution as declined is how a person acknowledges it.
var ErrDeclineStands = errors.New("reconcile: the processor declined the charge; resolve it declined to acknowledge it")

// ErrAttemptInFlight is returned (as an *AttemptInFlightError) by a manual resolution while
// an attempt of the charge may still be executing at the processor: whatever a check finds
// then, the attempt may still take effect.
var ErrAttemptInFlight = errors.New("reconcile: an attempt of the charge may still be executing")

// AttemptInFlightError is an ErrAttemptInFlight that says until when an attempt may execute.
type AttemptInFlightError struct {
	Until time.Time
}

// Error says until when an attempt may execute.
func (e *AttemptInFlightError) Error() string {
	return "reconcile: an attempt of the charge may still be executing until " + e.Until.UTC().Format(time.RFC3339Nano)
}

// Is makes errors.Is(err, ErrAttemptInFlight) hold.
func (e *AttemptInFlightError) Is(target error) bool { return target == ErrAttemptInFlight }

// DefaultInFlightMargin is how long after an attempt's own timeout the processor may still
// be executing it, by default: a client that gave up has not stopped the processor.
const DefaultInFlightMargin = 30 * time.Second

// CheckRunsAtMost bounds a reconciliation check's run (the janitor's check job times out
// after it): a replay of the charge's request is sent, and waited for, within it.
const CheckRunsAtMost = 2 * time.Minute

// CodeFailedByOperator is the failure code of a charge an operator resolved as failed.
const CodeFailedByOperator = "resolved_failed_by_operator"

// ManualResolution is an operator's resolution of a charge.
type ManualResolution struct {
	MerchantID string
	ChargeID   string
	Outcome    charge.Status // succeeded, declined or failed
	Note       string
	Actor      string        // who: "operator:" and the key id
	Within     time.Duration // how recent the inconclusive reconciliation must be
	// InFlightMargin is how long after an attempt's timeout it may still execute at the
	// processor (DefaultInFlightMargin when zero).
	InFlightMargin time.Duration
	// Caps are the card networks' reattempt caps the decline block's verdict is decided
	// under (zero fields: the defaults).
	Caps decline.Caps
}

// ResolveStore applies manual resolutions (a *store.DB).
type ResolveStore interface {
	// ResolveManually resolves a merchant's charge by hand in one transaction: under the
	// charge's lock it reads its ManualStanding (the card's history when withHistory), asks
	// plan for the resolution and applies it, with its trail. It returns the charge as
	// resolved, charge.ErrNotFound for no such charge of the merchant, or plan's error.
	ResolveManually(ctx context.Context, merchantID, chargeID string, withHistory bool,
		plan func(ManualStanding) (ManualPlan, error)) (*charge.Charge, error)
}

// ManualPlan is what a manual resolution writes: the charge's new status with what goes with
// it, and the audit trail's events, in order.
type ManualPlan struct {
	Resolution Resolution
	Events     []charge.Event
}

// ManualStanding is where a charge stands when an operator resolves it, as the store reads
// it under the charge's lock.
type ManualStanding struct {
	// Now is the database clock.
	Now time.Time
	// Charge is the charge as it is now.
	Charge *charge.Charge
	// InReview reports the charge in the review queue, for ReviewReason.
	InReview     bool
	ReviewReason string
	// LastCheckAt is when its last reconciliation check ran, LastInconclusiveAt when the
	// last inconclusive one did (nil: none), and Evidence the last check's record.
	LastCheckAt        *time.Time
	LastInconclusiveAt *time.Time
	Evidence           json.RawMessage
	// InFlight is what says whether an attempt of the charge may still be executing.
	InFlight InFlight
	// History is the card's history without the charge's own attempt, and HistoryAt when it
	// records that attempt: read when asked (a decline's block is judged on it).
	History   decline.History
	HistoryAt time.Time
	// Holders are the other live charges that hold the charge's reference and a place in its
	// reattempt chain.
	Holders charge.Duplicates
}

// InFlight is what says whether an attempt of a charge may still be executing.
type InFlight struct {
	// AttemptsEnd is the latest of the recorded attempts' starts plus their timeouts.
	AttemptsEnd *time.Time
	// LockedUntil is when the key of the charge's request frees itself.
	LockedUntil *time.Time
	// ReplayAt is the start of the last check whose replay of the request got no answer.
	ReplayAt *time.Time
}

// Until returns when every attempt of a charge in status has stopped executing at the
// latest, given margin (see DefaultInFlightMargin) and the database clock now; zero when no
// attempt was made: each recorded attempt may execute until its start plus its timeout plus
// margin; a request still open (the charge is processing: a key's lock outlives its run,
// which ends with the outcome) may send one until its key's lock expires (a request whose
// process died is resumed later by the completer: until now at least); an unanswered replay
// may execute until its check's bound plus margin.
func (f InFlight) Until(status charge.Status, margin time.Duration, now time.Time) time.Time {
	var until time.Time
	later := func(t time.Time) {
		if t.After(until) {
			until = t
		}
	}
	if f.AttemptsEnd != nil {
		later(f.AttemptsEnd.Add(margin))
	}
	if status == charge.StatusProcessing {
		end := now
		if f.LockedUntil != nil && f.LockedUntil.After(end) {
			end = *f.LockedUntil
		}
		later(end.Add(margin))
	}
	if f.ReplayAt != nil {
		later(f.ReplayAt.Add(CheckRunsAtMost + margin))
	}
	return until
}

// Resolve settles a pending (or in review) charge by hand through st, in one transaction,
// and appends it to the audit trail with the state before and after and the last check's
// evidence. The charge keeps its reconciliation schedule: processor evidence that
// contradicts the resolution later reopens it at the top of the review queue, which ends the
// resolution (the charge is pending again and can be resolved again).
//
// It returns an *AttemptInFlightError while an attempt of the charge may still be executing
// at the processor (see InFlight.Until), ErrNotResolvable for a charge with an outcome that
// is not in review, ErrReconcileFirst unless the charge's last check found nothing
// conclusive, within m.Within, and started after every attempt had stopped executing, and
// charge.ErrNotFound for no such charge of the merchant.
func Resolve(ctx context.Context, st ResolveStore, m ManualResolution) (*charge.Charge, error) {
	return st.ResolveManually(ctx, m.MerchantID, m.ChargeID, m.Outcome == charge.StatusDeclined, m.Plan)
}

// Plan decides the manual resolution m on the charge's standing s, and its audit events. It
// is pure.
func (m ManualResolution) Plan(s ManualStanding) (ManualPlan, error) {
	margin := m.InFlightMargin
	if margin <= 0 {
		margin = DefaultInFlightMargin
	}
	c := s.Charge
	if s.InReview && s.ReviewReason == charge.ReasonPossibleDuplicate && c.Status == charge.StatusDeclined {
		return m.acknowledge(s)
	}
	until := s.InFlight.Until(c.Status, margin, s.Now)
	if s.Now.Before(until) {
		return ManualPlan{}, &AttemptInFlightError{Until: until}
	}
	if err := m.reconciled(s, until); err != nil {
		return ManualPlan{}, err
	}
	res := Resolution{Status: m.Outcome}
	// The card's history follows an operator's approval or decline. An operator's "failed"
	// is a judgement, not proof that nothing reached the card network: the attempt stays in
	// the history as it was (it keeps counting against the network caps), and processor
	// evidence found later settles it there.
	switch m.Outcome {
	case charge.StatusSucceeded:
		res.Card = &charge.CardOutcome{Outcome: decline.Approved}
	case charge.StatusDeclined:
		res.Decline, res.Card = charge.OperatorDecline(c, s.History, s.HistoryAt, s.Now, m.Caps)
	case charge.StatusFailed:
		res.Failure = &charge.Failure{Code: CodeFailedByOperator, Retryable: false}
	}
	res.Duplicates = charge.Revived(c, c.Status, m.Outcome, s.Holders)
	events := append(res.Duplicates.Events(m.Actor, c.Status, m.Outcome), charge.Event{Actor: m.Actor,
		Action: "manual_resolution", StatusBefore: string(c.Status), StatusAfter: string(m.Outcome), Note: m.Note,
		Evidence: s.Evidence})
	return ManualPlan{Resolution: res, Events: events}, nil
}

// acknowledge decides the resolution of a declined charge in review as a possible duplicate
// payment: nothing was in flight or unknown (the processor answered), so no reconciliation
// comes first; the decline stands as the processor gave it, and the operator's note says what
// became of the order (paid by its first payment, or not). The charge leaves the queue.
func (m ManualResolution) acknowledge(s ManualStanding) (ManualPlan, error) {
	c := s.Charge
	if m.Outcome != charge.StatusDeclined {
		return ManualPlan{}, ErrDeclineStands
	}
	res := Resolution{Status: charge.StatusDeclined, Decline: c.Decline}
	return ManualPlan{Resolution: res, Events: []charge.Event{{Actor: m.Actor, Action: "manual_resolution",
		Reason: charge.ReasonPossibleDuplicate, StatusBefore: string(c.Status), StatusAfter: string(c.Status),
		Note: m.Note, Evidence: s.Evidence}}}, nil
}

// reconciled returns nil when the charge of s may be resolved by hand, every attempt having
// stopped executing at until: it is pending or in review, and its last check found nothing
// conclusive within m.Within, having looked after until (one that found nothing while an
// attempt was still running proves nothing).
func (m ManualResolution) reconciled(s ManualStanding, until time.Time) error {
	if s.Charge.Status != charge.StatusPending && !s.InReview {
		return ErrNotResolvable
	}
	last, inconclusive := s.LastCheckAt, s.LastInconclusiveAt
	if inconclusive == nil || last == nil || !inconclusive.Equal(*last) || s.Now.Sub(*inconclusive) > m.Within ||
		inconclusive.Before(until) {
		return ErrReconcileFirst
	}
	return nil
}
