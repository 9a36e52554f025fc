package jobs

import (
	"errors"
	"fmt"
)

var (
	// ErrNotFound is returned when no job has the id asked for (or it belongs to another
	// merchant: the two are indistinguishable on purpose).
	ErrNotFound = errors.New("jobs: not found")

	// ErrNotDead is returned by Replay for a job that is not a dead letter: it is waiting,
	// running, retrying, completed or cancelled. Only discarded jobs are replayed.
	ErrNotDead = errors.New("jobs: job is not a dead letter")

	// ErrReplayRefused is matched by every *ReplayRefusedError.
	ErrReplayRefused = errors.New("jobs: replay refused")

	// ErrDuplicate is returned by Replay when a live job with the same unique key (for
	// example the same charge) already exists: running the dead one too would break the
	// one-live-job-per-key rule.
	ErrDuplicate = errors.New("jobs: a live job with the same unique key exists")

	// ErrSchemaBehind is returned by Current when River's migrations embedded in this binary
	// are not all applied to the database.
	ErrSchemaBehind = errors.New("jobs: River schema is behind this binary: run `paygate migrate`")

	// ErrBadPage is returned by Dead for a cursor it did not hand out or a limit out of
	// bounds.
	ErrBadPage = errors.New("jobs: invalid page")

	// ErrPolicy is returned when a job kind, its policy or its insert options break the
	// package's rules (for example more than one River attempt for a kind that writes).
	ErrPolicy = errors.New("jobs: policy violation")
)

// ReplayRefusedError is returned by Replay when the replay guard (or the rule that a job
// kind writing to the processor needs a guard) refuses to run a dead letter again. Reason
// is the guard's own error, reachable with errors.As, so the guard can carry its own type
// (the 24 h rule closed, a network cap reached) through to the API.
type ReplayRefusedError struct {
	ID     int64
	Kind   string
	Reason error
}

// Error names the job and why its replay was refused.
func (e *ReplayRefusedError) Error() string {
	return fmt.Sprintf("jobs: replay of job %d (%s) refused: %v", e.ID, e.Kind, e.Reason)
}

// Is makes errors.Is(err, ErrReplayRefused) hold.
func (e *ReplayRefusedError) Is(target error) bool { return target == ErrReplayRefused }

// Unwrap returns the guard's reason.
func (e *ReplayRefusedError) Unwrap() error { return e.Reason }
