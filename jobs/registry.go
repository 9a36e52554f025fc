package jobs

import (
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// Registry holds the job kinds a Queue can work: each kind's River worker and Policy, and
// the periodic jobs. Build it before New; every replica registers the same kinds.
type Registry struct {
	workers       *river.Workers
	policies      *policies
	periodic      []*river.PeriodicJob
	periodicKinds []string
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{workers: river.NewWorkers(), policies: &policies{}}
}

// Add registers the worker of one job kind with its policy. It returns an error wrapping
// ErrPolicy for a policy that breaks the rules (a kind that writes with more than one
// attempt, attempts out of bounds), and an error when the kind is already registered.
func Add[T river.JobArgs](r *Registry, w river.Worker[T], p Policy) error {
	var args T
	kind := args.Kind()
	if err := p.validate(kind); err != nil {
		return err
	}
	if _, ok := r.policies.get(kind); ok {
		return fmt.Errorf("jobs: kind %q registered twice", kind)
	}
	if err := river.AddWorkerSafely(r.workers, w); err != nil {
		return fmt.Errorf("jobs: register %q: %w", kind, err)
	}
	r.policies.set(kind, p)
	return nil
}

// Every registers a periodic job: args inserted every interval (at least one second) by
// the replica currently leading, whichever that is; with runOnStart a new leader also
// inserts one at once. Inserts are unique per period (UTC multiples of interval), so a
// change of leader inserts no second job in the same period; two runs can still fall on
// either side of a period boundary, so the work must be idempotent. The kind must already
// be registered with Add.
func (r *Registry) Every(interval time.Duration, args river.JobArgs, runOnStart bool) error {
	kind := args.Kind()
	pol, ok := r.policies.get(kind)
	if !ok {
		return fmt.Errorf("jobs: periodic job of kind %q: register its worker first", kind)
	}
	for _, pj := range r.periodicKinds {
		if pj == kind {
			return fmt.Errorf("jobs: periodic job of kind %q registered twice", kind)
		}
	}
	if interval < time.Second {
		return fmt.Errorf("jobs: periodic job of kind %q: interval %s is below one second", kind, interval)
	}
	r.periodicKinds = append(r.periodicKinds, kind)
	r.periodic = append(r.periodic, river.NewPeriodicJob(
		river.PeriodicInterval(interval),
		func() (river.JobArgs, *river.InsertOpts) {
			return args, &river.InsertOpts{
				Queue: pol.Queue,
				UniqueOpts: river.UniqueOpts{
					ByPeriod: interval,
					ByState:  rivertype.UniqueOptsByStateDefault(),
				},
			}
		},
		&river.PeriodicJobOpts{ID: kind, RunOnStart: runOnStart},
	))
	return nil
}
