package reconcile

import (
	"context"
	"errors"
	"time"

	"github.com/paygate/paygate/processor"
)

// Store records what reconciliation decides. Each method is one transaction that appends
// the check to the charge's append-only reconciliation trail together with the change it
// makes; none is open while the processor is called.
//
// Each check number is recorded once per charge: a method called with a Check.N the charge
// already has returns ErrStale and changes nothing, so that two reconcilers racing for one
// charge record one check and resolve it once.
//
// A check never silently overwrites an operator: when the charge was resolved after the
// check read it (its resolution, under the charge's lock, differs from Check.Manual), each
// method records the check's decision as AgainstManual makes it for that resolution.
type Store interface {
	// Resolve ends a pending charge with p.Outcome: it sets the status, saves
	// p.PaymentIntent as the processor_ref, takes the charge out of the review queue and the
	// schedule, and for a decline feeds p.Decline to the decline rules (network caps,
	// reattempt schedule) as a direct decline. If an operator resolved the charge meanwhile
	// with another outcome, it reopens it at the top of the review queue instead
	// (ReasonContradictsManual), with the check's evidence; with the same outcome it only
	// records the check.
	Resolve(ctx context.Context, p ResolveParams) error
	// Reschedule records a check that leaves the charge as it is, saves p.PaymentIntent as
	// the processor_ref when the charge has none, and schedules the next check at
	// p.NextCheckAt (no further check when zero). A reopened charge stays at the top of the
	// review queue.
	Reschedule(ctx context.Context, p RescheduleParams) error
	// ToReview records a check that needs a person: the charge (still pending, or reopened
	// when an operator resolved it) enters the review queue with p.Reason and the check's
	// evidence, or has its reason updated there; it saves p.PaymentIntent as the
	// processor_ref when the charge has none, and schedules the next check at p.NextCheckAt
	// (no further check when zero). Reopening ends the operator's resolution: the charge is
	// an ordinary pending charge again, which stays at the top of the review queue until a
	// check or an operator resolves it.
	ToReview(ctx context.Context, p ReviewParams) error
}

// ErrStale is returned by a Store for a check whose number the charge already has: another
// reconciler recorded it first. The charge needs nothing more from this check.
var ErrStale = errors.New("reconcile: check already recorded")

// ResolveParams are the inputs of Store.Resolve.
type ResolveParams struct {
	ChargeID      string
	Outcome       Outcome
	Path          Path
	PaymentIntent string             // empty for an absence
	Decline       *processor.Decline // for OutcomeDeclined
	Check         Check
}

// RescheduleParams are the inputs of Store.Reschedule.
type RescheduleParams struct {
	ChargeID      string
	PaymentIntent string // the PaymentIntent learned, when any
	NextCheckAt   time.Time
	Check         Check
}

// ReviewParams are the inputs of Store.ToReview.
type ReviewParams struct {
	ChargeID      string
	Reason        Reason
	PaymentIntent string // the PaymentIntent learned, when any
	NextCheckAt   time.Time
	Check         Check
}
