package charge

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"go.uber.org/zap"

	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/jobs"
)

// ChainStore is what the automatic reattempt chains need of the store of record beside the
// engine's Store: the steps that are due, and the end or the deferral of a chain's step.
type ChainStore interface {
	// DueReattempts returns up to limit steps whose slot has come and whose charge does not
	// exist yet.
	DueReattempts(ctx context.Context, limit int) ([]DueReattempt, error)
	// EndChain stops the chain at declinedID, with reason in the audit trail; ErrNotFound
	// when it has no step left.
	EndChain(ctx context.Context, declinedID, reason string) error
	// DeferChain moves the chain's due step to at, with reason in the audit trail;
	// ErrNotFound when it has no step left.
	DeferChain(ctx context.Context, declinedID string, at time.Time, reason string) error
}

// DueReattempt is the next step of an automatic reattempt chain whose slot has come.
type DueReattempt struct {
	DeclinedID string
	MerchantID string
	NextID     string
}

// ChainStep is one charge of a reattempt chain, as the API lists it.
type ChainStep struct {
	ID              string     `json:"id"`
	Status          string     `json:"status"`
	Created         int64      `json:"created"`
	ReattemptOf     *string    `json:"reattempt_of"`
	NextReattemptAt *time.Time `json:"next_reattempt_at,omitempty"`
}

// Inserter enqueues jobs (a *jobs.Queue).
type Inserter interface {
	Insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (jobs.Inserted, error)
}

// AutoReattemptArgs is the job that runs one step of an automatic chain.
type AutoReattemptArgs struct {
	DeclinedID string `json:"declined_id" river:"unique"`
	MerchantID string `json:"merchant_id"`
	NextID     string `json:"next_id"`
}

// Kind implements river.JobArgs.
func (AutoReattemptArgs) Kind() string { return "auto_reattempt" }

// AutoSweepArgs is the periodic job that enqueues the due steps.
type AutoSweepArgs struct{}

// Kind implements river.JobArgs.
func (AutoSweepArgs) Kind() string { return "auto_reattempt_sweep" }

// AutoChainsConfig configures the automatic reattempt chains.
type AutoChainsConfig struct {
	// Service runs each step, as a merchant's own reattempt runs.
	Service *Service
	Store   ChainStore
	// SweepEvery is how often the due steps are enqueued (default 5 s).
	SweepEvery time.Duration
	// StepTimeout bounds one step's job (default 1 min; the retry loop's own deadline is far
	// shorter).
	StepTimeout time.Duration
	Log         *zap.Logger
}

// AutoChains runs the automatic reattempt chains of merchant-initiated charges created with
// "reattempt": "auto" on River: a periodic sweep enqueues each due step once (unique per
// declined charge), and the step's job runs it through the engine. The job writes to the
// processor, so River runs it once: a failure is a dead letter, and a deliberate replay
// resumes the same reattempt under the same inbound key (AutoKey), never a second one.
type AutoChains struct {
	cfg   AutoChainsConfig
	log   *zap.Logger
	queue Inserter
}

// NewAutoChains registers the chains' jobs on reg; call Attach with the queue once it exists.
func NewAutoChains(cfg AutoChainsConfig, reg *jobs.Registry) (*AutoChains, error) {
	if cfg.SweepEvery <= 0 {
		cfg.SweepEvery = 5 * time.Second
	}
	if cfg.StepTimeout <= 0 {
		cfg.StepTimeout = time.Minute
	}
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	a := &AutoChains{cfg: cfg, log: cfg.Log}
	if err := jobs.Add(reg, &stepWorker{a: a}, jobs.WriteOnce()); err != nil {
		return nil, err
	}
	if err := jobs.Add(reg, &autoSweeper{a: a}, jobs.Retryable(1)); err != nil {
		return nil, err
	}
	if err := reg.Every(cfg.SweepEvery, AutoSweepArgs{}, true); err != nil {
		return nil, err
	}
	return a, nil
}

// Attach gives the chains their queue.
func (a *AutoChains) Attach(q Inserter) { a.queue = q }

// Sweep enqueues every due step once and returns how many it enqueued.
func (a *AutoChains) Sweep(ctx context.Context) (int, error) {
	if a.queue == nil {
		return 0, errors.New("charge: automatic chains: no queue attached")
	}
	due, err := a.cfg.Store.DueReattempts(ctx, 500)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, d := range due {
		opts, err := jobs.ForMerchant(&river.InsertOpts{UniqueOpts: jobs.UniquePerArgs()}, d.MerchantID)
		if err != nil {
			return n, err
		}
		ins, err := a.queue.Insert(ctx, AutoReattemptArgs(d), opts)
		if err != nil {
			return n, fmt.Errorf("charge: enqueue the automatic reattempt of %s: %w", d.DeclinedID, err)
		}
		if !ins.Duplicate {
			n++
		}
	}
	return n, nil
}

// Step runs the step a of a chain and records what the network rules made of it: a step they
// find too early waits for the slot they name; a refusal, or another live reattempt of the
// chain, ends the chain. It returns an error when the step is undone (the processor was
// unavailable, or the engine failed): the job becomes a dead letter.
func (a *AutoChains) Step(ctx context.Context, step AutoReattemptArgs) error {
	resp, err := a.cfg.Service.AutoReattempt(ctx, step.MerchantID, step.DeclinedID, step.NextID)
	if stop, ok := chainStopOf(err); ok {
		fields := []zap.Field{zap.String("charge_id", step.DeclinedID), zap.String("reason", stop.reason)}
		what := "end"
		switch {
		case !stop.deferTo.IsZero():
			fields, what = append(fields, zap.Time("not_before", stop.deferTo)), "defer"
			err = a.cfg.Store.DeferChain(ctx, step.DeclinedID, stop.deferTo, stop.reason)
		case stop.live != "":
			fields = append(fields, zap.String("live_charge_id", stop.live))
			fallthrough
		default:
			err = a.cfg.Store.EndChain(ctx, step.DeclinedID, stop.reason)
		}
		a.log.Info(stop.message, fields...)
		// A chain with no step left to change: a sweep or a replay got there first.
		if err != nil && !errors.Is(err, ErrNotFound) {
			return fmt.Errorf("charge: %s the chain of %s: %w", what, step.DeclinedID, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("automatic reattempt of %s: %w", step.DeclinedID, err)
	}
	if resp.Status >= 500 {
		// Nothing reached the processor (it was unreachable): the step stays undone. The
		// job ends as a dead letter, and a replay runs the same reattempt again.
		return fmt.Errorf("automatic reattempt %s of %s: the processor was unavailable (HTTP %d)", step.NextID, step.DeclinedID, resp.Status)
	}
	a.log.Info("automatic reattempt", zap.String("charge_id", step.NextID), zap.String("reattempt_of", step.DeclinedID),
		zap.Int("http_status", resp.Status))
	return nil
}

// chainStop is what a step's refusal does to its chain.
type chainStop struct {
	message string    // for the log
	reason  string    // for the audit trail
	deferTo time.Time // the slot the step waits for; zero: the chain ends
	live    string    // the live reattempt of the chain that ends it
}

// chainStopOf returns what the engine's answer err to a step does to its chain: an answer of
// the rules, not a failure of the job. A step the rules find too early (a Mastercard advice
// delay, or another decline meanwhile moved its slot) waits for the slot they name, and the
// rules decide again then; another reattempt of the chain that is live (the merchant's own,
// say: the declined charge may be paid) or any other refusal ends the chain, so that no
// sweep enqueues the step again.
func chainStopOf(err error) (chainStop, bool) {
	var (
		refused *ReattemptRefusedError
		live    *DuplicateReattemptError
	)
	switch {
	case errors.As(err, &refused) && refused.Verdict.Reason == decline.ReasonTooEarly && !refused.Verdict.NotBefore.IsZero():
		return chainStop{message: "automatic reattempt deferred by the network rules", reason: string(refused.Verdict.Reason),
			deferTo: refused.Verdict.NotBefore}, true
	case errors.As(err, &live):
		return chainStop{message: "automatic reattempt chain stopped: another reattempt is live", reason: "reattempt_live",
			live: live.ChargeID}, true
	case errors.As(err, &refused):
		return chainStop{message: "automatic reattempt chain stopped by the network rules", reason: string(refused.Verdict.Reason)}, true
	}
	return chainStop{}, false
}

type autoSweeper struct {
	river.WorkerDefaults[AutoSweepArgs]
	a *AutoChains
}

func (w *autoSweeper) Work(ctx context.Context, _ *river.Job[AutoSweepArgs]) error {
	_, err := w.a.Sweep(ctx)
	return err
}

type stepWorker struct {
	river.WorkerDefaults[AutoReattemptArgs]
	a *AutoChains
}

// Timeout bounds one step.
func (w *stepWorker) Timeout(*river.Job[AutoReattemptArgs]) time.Duration { return w.a.cfg.StepTimeout }

func (w *stepWorker) Work(ctx context.Context, job *river.Job[AutoReattemptArgs]) error {
	return w.a.Step(ctx, job.Args)
}
