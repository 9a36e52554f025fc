package janitor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"go.uber.org/zap"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/jobs"
	"github.com/paygate/paygate/reconcile"
	"github.com/paygate/paygate/store"
)

// Store is what the janitor needs from the store of record.
type Store interface {
	DueReconciliations(ctx context.Context, limit int) ([]reconcile.Due, error)
	ReconcileTarget(ctx context.Context, chargeID string) (reconcile.Charge, string, charge.Status, error)
	RecordCheck(ctx context.Context, r store.CheckRecord) error
	Charge(ctx context.Context, merchantID, id string) (*charge.Charge, error)
	CardHistoryOf(ctx context.Context, c *charge.Charge) (decline.History, time.Time, error)
}

var _ Store = (*store.DB)(nil)

// Config configures the janitor.
type Config struct {
	Store Store
	// Reconciler runs the checks; its Store is set by New.
	Reconciler reconcile.Config
	Caps       decline.Caps
	// SweepEvery is how often due charges are enqueued (default 5 s).
	SweepEvery time.Duration
	// Replay, when set, lets a check send a pending charge's request again under its own
	// key when the reads found nothing and reconcile.CanReplay allows it. A check then
	// writes, so River runs it once. Nil: reads only.
	Replay Writer
	Log    *zap.Logger
}

// Janitor registers the reconciliation jobs on a job registry.
type Janitor struct {
	store  Store
	rec    *reconcile.Reconciler
	caps   decline.Caps
	log    *zap.Logger
	queue  Inserter
	checks *prometheus.CounterVec
}

// Inserter enqueues jobs (a *jobs.Queue).
type Inserter interface {
	Insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (jobs.Inserted, error)
}

// New returns a janitor and registers its jobs on reg: the periodic sweep and the
// per-charge check. Call Attach with the queue once it exists.
func New(cfg Config, reg *jobs.Registry) (*Janitor, error) {
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	if cfg.SweepEvery <= 0 {
		cfg.SweepEvery = 5 * time.Second
	}
	j := &Janitor{store: cfg.Store, caps: cfg.Caps, log: cfg.Log,
		checks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "paygate", Name: "reconciliation_checks_total",
			Help: "Reconciliation checks by decision (resolve, pending, review) and path (retrieve, list, search, absence).",
		}, []string{"kind", "path"})}
	rc := cfg.Reconciler
	rc.Store = recorder{j}
	policy := jobs.Retryable(5) // a check that only reads may run again
	if cfg.Replay != nil {
		rc.Replayer = replayer{store: cfg.Store, writer: cfg.Replay}
		policy = jobs.WriteOnce()
	}
	if rc.Log == nil {
		rc.Log = cfg.Log
	}
	rec, err := reconcile.New(rc)
	if err != nil {
		return nil, err
	}
	j.rec = rec
	if err := jobs.Add(reg, &checkWorker{j: j}, policy.InQueue(jobs.QueueReconcile)); err != nil {
		return nil, err
	}
	if err := j.registerEventChecks(reg); err != nil {
		return nil, err
	}
	if err := jobs.Add(reg, &sweepWorker{j: j}, jobs.Retryable(1)); err != nil {
		return nil, err
	}
	if err := reg.Every(cfg.SweepEvery, SweepArgs{}, true); err != nil {
		return nil, err
	}
	return j, nil
}

// Attach gives the janitor the queue its sweep enqueues checks on.
func (j *Janitor) Attach(q Inserter) { j.queue = q }

// CheckArgs is the job that runs one reconciliation check of one charge.
type CheckArgs struct {
	ChargeID string `json:"charge_id" river:"unique"`
}

// Kind implements river.JobArgs.
func (CheckArgs) Kind() string { return "reconcile_charge" }

// SweepArgs is the periodic job that enqueues the due checks.
type SweepArgs struct{}

// Kind implements river.JobArgs.
func (SweepArgs) Kind() string { return "reconcile_sweep" }

type sweepWorker struct {
	river.WorkerDefaults[SweepArgs]
	j *Janitor
}

func (w *sweepWorker) Work(ctx context.Context, _ *river.Job[SweepArgs]) error {
	n, err := w.j.Sweep(ctx)
	if n > 0 {
		w.j.log.Debug("reconciliation checks enqueued", zap.Int("charges", n))
	}
	return err
}

// Sweep enqueues a check for every charge due one, once per charge; it returns how many it
// enqueued.
func (j *Janitor) Sweep(ctx context.Context) (int, error) {
	if j.queue == nil {
		return 0, errors.New("janitor: no queue attached")
	}
	due, err := j.store.DueReconciliations(ctx, 1000)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, d := range due {
		opts, err := jobs.ForMerchant(&river.InsertOpts{Queue: jobs.QueueReconcile, UniqueOpts: jobs.UniquePerArgs()}, d.MerchantID)
		if err != nil {
			return n, err
		}
		ins, err := j.queue.Insert(ctx, CheckArgs{ChargeID: d.ChargeID}, opts)
		if err != nil {
			return n, fmt.Errorf("janitor: enqueue check of %s: %w", d.ChargeID, err)
		}
		if !ins.Duplicate {
			n++
		}
	}
	return n, nil
}

type checkWorker struct {
	river.WorkerDefaults[CheckArgs]
	j *Janitor
}

func (w *checkWorker) Timeout(*river.Job[CheckArgs]) time.Duration { return 2 * time.Minute }

func (w *checkWorker) Work(ctx context.Context, job *river.Job[CheckArgs]) error {
	_, err := w.j.Check(ctx, job.Args.ChargeID)
	return err
}

// Check runs one reconciliation check of a charge now and records it. A check another
// replica recorded first is not an error.
func (j *Janitor) Check(ctx context.Context, chargeID string) (reconcile.Check, error) {
	target, _, status, err := j.store.ReconcileTarget(ctx, chargeID)
	if err != nil {
		return reconcile.Check{}, err
	}
	if status != charge.StatusPending && target.Manual == "" {
		return reconcile.Check{}, nil // settled meanwhile
	}
	chk, err := j.rec.Reconcile(ctx, target)
	if errors.Is(err, reconcile.ErrStale) {
		return chk, nil
	}
	if err != nil {
		return chk, fmt.Errorf("janitor: reconcile %s: %w", chargeID, err)
	}
	j.checks.WithLabelValues(string(chk.Decision.Kind), string(chk.Decision.Path)).Inc()
	j.log.Info("reconciliation check", zap.String("charge_id", chargeID), zap.Int("check", chk.N),
		zap.String("kind", string(chk.Decision.Kind)), zap.String("path", string(chk.Decision.Path)),
		zap.String("reason", string(chk.Decision.Reason)))
	return chk, nil
}

// recorder implements reconcile.Store on the store of record.
type recorder struct{ j *Janitor }

func (r recorder) Resolve(ctx context.Context, p reconcile.ResolveParams) error {
	rec := store.CheckRecord{ChargeID: p.ChargeID, Check: p.Check, PaymentIntent: p.PaymentIntent, Actor: "reconciler"}
	res := &store.Resolution{Status: charge.Status(p.Outcome)}
	switch p.Outcome {
	case reconcile.OutcomeSucceeded:
		res.Card = &charge.CardOutcome{Outcome: decline.Approved}
	case reconcile.OutcomeDeclined:
		target, merchant, _, err := r.j.store.ReconcileTarget(ctx, p.ChargeID)
		if err != nil {
			return err
		}
		c, err := r.j.store.Charge(ctx, merchant, target.ID)
		if err != nil {
			return err
		}
		h, at, err := r.j.store.CardHistoryOf(ctx, c)
		if err != nil {
			return err
		}
		res.Decline, res.Card = charge.DeclineOutcome(c, p.Decline, h, at, p.Check.At, r.j.caps)
	case reconcile.OutcomeFailed:
		// An authoritative absence: the processor holds nothing under the key.
		res.Failure = &charge.Failure{Code: "not_found_at_processor", Retryable: false}
	}
	if p.Check.Decision.Reason == reconcile.ReasonContradictsManual {
		res.Reopen = true
		rec.Review, rec.ReviewReason, rec.Rank = true, string(reconcile.ReasonContradictsManual), 1
	}
	rec.Resolve = res
	return r.j.store.RecordCheck(ctx, rec)
}

func (r recorder) Reschedule(ctx context.Context, p reconcile.RescheduleParams) error {
	return r.j.store.RecordCheck(ctx, store.CheckRecord{ChargeID: p.ChargeID, Check: p.Check,
		PaymentIntent: p.PaymentIntent, NextCheckAt: p.NextCheckAt, Actor: "reconciler"})
}

func (r recorder) ToReview(ctx context.Context, p reconcile.ReviewParams) error {
	rec := store.CheckRecord{ChargeID: p.ChargeID, Check: p.Check, PaymentIntent: p.PaymentIntent,
		NextCheckAt: p.NextCheckAt, Review: true, ReviewReason: string(p.Reason), Actor: "reconciler"}
	if p.Reason == reconcile.ReasonContradictsManual {
		// Evidence against an operator's resolution: the charge is reopened, first in line.
		rec.Reopen()
	}
	return r.j.store.RecordCheck(ctx, rec)
}
