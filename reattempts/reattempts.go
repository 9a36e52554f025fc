// Package reattempts runs the automatic reattempt chains of merchant-initiated charges
// created with "reattempt": "auto" (subscriptions), on River.
//
// When such a charge is declined, the charge engine persists, with the decline and in the
// same statement, the next step of its chain: the reattempt's charge id — so its processor
// key is fixed before anything runs — and the next slot of the decline class's schedule. A
// periodic sweep enqueues each due step once (unique per declined charge); the job runs the
// reattempt through the same charge engine, network caps and schedule as a merchant's own
// reattempt. The chain stops on an approval, a never-class decline, fix data first, the
// network cap or the end of the schedule; a step the rules find too early (the card's history
// moved its slot) waits for the slot they name. The job writes to the processor, so River runs it
// once: a failure is a dead letter, and a deliberate replay resumes the same reattempt under
// the same inbound key, never a second one.
package reattempts

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"go.uber.org/zap"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/jobs"
	"github.com/paygate/paygate/store"
)

// Store finds the steps that are due.
type Store interface {
	DueReattempts(ctx context.Context, limit int) ([]store.DueReattempt, error)
	EndChain(ctx context.Context, declinedID, reason string) error
	DeferChain(ctx context.Context, declinedID string, at time.Time, reason string) error
}

// Engine runs one automatic reattempt (a *charge.Service).
type Engine interface {
	AutoReattempt(ctx context.Context, merchantID, declinedID, nextID string) (charge.Response, error)
}

// Inserter enqueues jobs (a *jobs.Queue).
type Inserter interface {
	Insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (jobs.Inserted, error)
}

// Args is the job that runs one step of an automatic chain.
type Args struct {
	DeclinedID string `json:"declined_id" river:"unique"`
	MerchantID string `json:"merchant_id"`
	NextID     string `json:"next_id"`
}

// Kind implements river.JobArgs.
func (Args) Kind() string { return "auto_reattempt" }

// SweepArgs is the periodic job that enqueues the due steps.
type SweepArgs struct{}

// Kind implements river.JobArgs.
func (SweepArgs) Kind() string { return "auto_reattempt_sweep" }

// Runner registers and feeds the automatic reattempt jobs.
type Runner struct {
	store  Store
	engine Engine
	log    *zap.Logger
	queue  Inserter
}

// New registers the jobs on reg; call Attach with the queue once it exists.
func New(st Store, engine Engine, log *zap.Logger, reg *jobs.Registry, sweepEvery time.Duration) (*Runner, error) {
	r := &Runner{store: st, engine: engine, log: log}
	if err := jobs.Add(reg, &worker{r: r}, jobs.WriteOnce()); err != nil {
		return nil, err
	}
	if err := jobs.Add(reg, &sweeper{r: r}, jobs.Retryable(1)); err != nil {
		return nil, err
	}
	if err := reg.Every(sweepEvery, SweepArgs{}, true); err != nil {
		return nil, err
	}
	return r, nil
}

// Attach gives the runner its queue.
func (r *Runner) Attach(q Inserter) { r.queue = q }

// Sweep enqueues every due step once and returns how many it enqueued.
func (r *Runner) Sweep(ctx context.Context) (int, error) {
	if r.queue == nil {
		return 0, errors.New("reattempts: no queue attached")
	}
	due, err := r.store.DueReattempts(ctx, 500)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, d := range due {
		opts, err := jobs.ForMerchant(&river.InsertOpts{UniqueOpts: jobs.UniquePerArgs()}, d.MerchantID)
		if err != nil {
			return n, err
		}
		ins, err := r.queue.Insert(ctx, Args{DeclinedID: d.DeclinedID, MerchantID: d.MerchantID, NextID: d.NextID}, opts)
		if err != nil {
			return n, fmt.Errorf("reattempts: enqueue %s: %w", d.DeclinedID, err)
		}
		if !ins.Duplicate {
			n++
		}
	}
	return n, nil
}

type sweeper struct {
	river.WorkerDefaults[SweepArgs]
	r *Runner
}

func (w *sweeper) Work(ctx context.Context, _ *river.Job[SweepArgs]) error {
	_, err := w.r.Sweep(ctx)
	return err
}

type worker struct {
	river.WorkerDefaults[Args]
	r *Runner
}

// Timeout bounds one step: the retry loop's own deadline is far shorter.
func (w *worker) Timeout(*river.Job[Args]) time.Duration { return time.Minute }

func (w *worker) Work(ctx context.Context, job *river.Job[Args]) error {
	a := job.Args
	resp, err := w.r.engine.AutoReattempt(ctx, a.MerchantID, a.DeclinedID, a.NextID)
	var (
		refused *charge.ReattemptRefusedError
		live    *charge.DuplicateReattemptError
	)
	switch {
	case errors.As(err, &refused) && refused.Verdict.Reason == decline.ReasonTooEarly && !refused.Verdict.NotBefore.IsZero():
		// The card's history moved the step's slot (a Mastercard advice delay, or another
		// decline meanwhile): the step waits for it, and the rules decide again then.
		at := refused.Verdict.NotBefore
		w.r.log.Info("automatic reattempt deferred by the network rules", zap.String("charge_id", a.DeclinedID),
			zap.String("reason", string(refused.Verdict.Reason)), zap.Time("not_before", at))
		return ignoreNotFound(w.r.store.DeferChain(ctx, a.DeclinedID, at, string(refused.Verdict.Reason)), "defer", a.DeclinedID)
	case errors.As(err, &live):
		// Another reattempt of the chain (the merchant's own, say) is pending or succeeded:
		// the declined charge may be paid, and the automatic chain ends here.
		w.r.log.Info("automatic reattempt chain stopped: another reattempt is live", zap.String("charge_id", a.DeclinedID),
			zap.String("live_charge_id", live.ChargeID))
		return ignoreNotFound(w.r.store.EndChain(ctx, a.DeclinedID, "reattempt_live"), "end", a.DeclinedID)
	case errors.As(err, &refused):
		// The network rules end the chain here: an answer, not a failure of the job. The
		// step is no longer due, so no sweep enqueues it again.
		w.r.log.Info("automatic reattempt chain stopped by the network rules", zap.String("charge_id", a.DeclinedID),
			zap.String("reason", string(refused.Verdict.Reason)))
		return ignoreNotFound(w.r.store.EndChain(ctx, a.DeclinedID, string(refused.Verdict.Reason)), "end", a.DeclinedID)
	}
	if err != nil {
		return fmt.Errorf("automatic reattempt of %s: %w", a.DeclinedID, err)
	}
	if resp.Status >= 500 {
		// Nothing reached the processor (it was unreachable): the step stays undone. The
		// job ends as a dead letter, and a replay runs the same reattempt again.
		return fmt.Errorf("automatic reattempt %s of %s: the processor was unavailable (HTTP %d)", a.NextID, a.DeclinedID, resp.Status)
	}
	w.r.log.Info("automatic reattempt", zap.String("charge_id", a.NextID), zap.String("reattempt_of", a.DeclinedID),
		zap.Int("http_status", resp.Status))
	return nil
}

// ignoreNotFound returns the error of a change (what: "end", "defer") to a chain, nil when the
// chain had no step left to change: a sweep or a replay got there first.
func ignoreNotFound(err error, what, declinedID string) error {
	if err == nil || errors.Is(err, store.ErrNotFound) {
		return nil
	}
	return fmt.Errorf("%s the chain of %s: %w", what, declinedID, err)
}
