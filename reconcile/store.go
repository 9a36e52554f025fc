package reconcile

import (
	"context"
	"errors"
)

// Store records what reconciliation decides, one check at a time, in one transaction per
// check that appends the check to the charge's append-only reconciliation trail together
// with the change it makes; none is open while the processor is called.
type Store interface {
	// RecordCheck records one check: under the charge's lock it reads the charge's Standing
	// (with what q asks for), asks plan what the check changes, and applies the plan. plan
	// is pure; it may be called more than once. Each check number is recorded once per
	// charge: a plan whose check's number the charge already has makes RecordCheck return
	// ErrStale, having changed nothing, so that two reconcilers racing for one charge record
	// one check and resolve it once.
	RecordCheck(ctx context.Context, q StandingQuery, plan func(Standing) (CheckPlan, error)) error
}

// ErrStale is returned by a Store for a check whose number the charge already has: another
// reconciler recorded it first. The charge needs nothing more from this check.
var ErrStale = errors.New("reconcile: check already recorded")
