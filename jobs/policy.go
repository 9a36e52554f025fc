package jobs

import (
	"context"
	"fmt"
	"sync"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// MaxRetryableAttempts bounds the River attempts of a Retryable kind.
const MaxRetryableAttempts = 25

// Policy says how River may run the jobs of one kind: how many attempts River makes (its
// own retries) and in which queue the kind runs by default.
type Policy struct {
	// Writes marks kinds whose work can write to the processor. They run with exactly one
	// River attempt: a failure is discarded into the dead letters, never retried by River,
	// because the job's own retry loop is the only retry a processor write may have (the
	// 24 h rule, "The 24 h rule, everywhere" in the design).
	Writes bool
	// MaxAttempts is River's total number of attempts for one job, first run included.
	MaxAttempts int
	// Queue is the queue jobs of the kind go to when the insert options name none; empty
	// means River's rule (the args' own InsertOpts, else the default queue).
	Queue string
}

// WriteOnce is the policy of job kinds that write to the processor (a charge, a reattempt,
// a replay of a key): one River attempt, then the dead letters.
func WriteOnce() Policy { return Policy{Writes: true, MaxAttempts: 1} }

// Retryable is the policy of job kinds that are safe to run again: processor reads, and
// housekeeping that is idempotent. River retries a failure with its backoff until
// maxAttempts attempts (1 to MaxRetryableAttempts) have failed; then the job is dead.
func Retryable(maxAttempts int) Policy { return Policy{MaxAttempts: maxAttempts} }

// InQueue returns the policy with its default queue set to queue.
func (p Policy) InQueue(queue string) Policy {
	p.Queue = queue
	return p
}

func (p Policy) validate(kind string) error {
	switch {
	case p.Writes && p.MaxAttempts != 1:
		return fmt.Errorf("%w: kind %q writes to the processor and must run with one attempt, not %d", ErrPolicy, kind, p.MaxAttempts)
	case p.MaxAttempts < 1 || p.MaxAttempts > MaxRetryableAttempts:
		return fmt.Errorf("%w: kind %q: max attempts %d out of 1..%d", ErrPolicy, kind, p.MaxAttempts, MaxRetryableAttempts)
	}
	return nil
}

// policies maps each registered kind to its policy. Kinds it does not know run with one
// attempt: a job nobody classified is treated as one that writes.
type policies struct {
	mu     sync.RWMutex
	byKind map[string]Policy
}

func (ps *policies) get(kind string) (Policy, bool) {
	ps.mu.RLock()
	defer ps.mu.RUnlock()
	p, ok := ps.byKind[kind]
	if !ok {
		return WriteOnce(), false
	}
	return p, true
}

func (ps *policies) set(kind string, p Policy) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.byKind == nil {
		ps.byKind = make(map[string]Policy)
	}
	ps.byKind[kind] = p
}

// attemptsMiddleware applies each kind's MaxAttempts to every insert that goes through the
// River client (this package's helpers, the raw client, periodic jobs), so the write rule
// holds however a job is enqueued.
type attemptsMiddleware struct {
	river.MiddlewareDefaults
	policies *policies
}

var _ rivertype.JobInsertMiddleware = (*attemptsMiddleware)(nil)

func (m *attemptsMiddleware) InsertMany(ctx context.Context, many []*rivertype.JobInsertParams, doInner func(context.Context) ([]*rivertype.JobInsertResult, error)) ([]*rivertype.JobInsertResult, error) {
	for _, p := range many {
		pol, _ := m.policies.get(p.Kind)
		p.MaxAttempts = pol.MaxAttempts
	}
	return doInner(ctx)
}
