package reconcile

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
)

// JanitorStore is what the janitor needs of the store of record (a *store.DB).
type JanitorStore interface {
	Store
	ResolveStore
	// DueReconciliations returns up to limit charges whose next check is due, oldest due
	// first.
	DueReconciliations(ctx context.Context, limit int) ([]Due, error)
	// ClaimSweep claims up to limit charges of processor account whose check is due and whose
	// PaymentIntent id is unknown, oldest due first, for lease: their next check moves to the
	// lease's end (the check's record sets it again), so that no other sweep takes them
	// meanwhile, and a sweep that dies leaves them due again when the lease ends. Charges
	// another transaction is claiming are skipped.
	ClaimSweep(ctx context.Context, account string, limit int, lease time.Duration) ([]string, error)
	// ReconcileTarget returns what a check needs of a charge.
	ReconcileTarget(ctx context.Context, chargeID string) (Target, error)
	// Charge returns a merchant's charge, or charge.ErrNotFound.
	Charge(ctx context.Context, merchantID, id string) (*charge.Charge, error)
}

// Inserter enqueues jobs (a *jobs.Queue).
type Inserter interface {
	Insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (jobs.Inserted, error)
}

// JanitorConfig configures the janitor.
type JanitorConfig struct {
	Store JanitorStore
	// Reconciler runs the checks; its Store is set by NewJanitor.
	Reconciler Config
	// SweepEvery is how often due charges are enqueued (default 5 s).
	SweepEvery time.Duration
	// SweepBatch is how many charges one sweep of an account checks at most
	// (DefaultSweepBatch when zero).
	SweepBatch int
	// SweepGather is how long the due charges of an account whose PaymentIntent id is
	// unknown wait for others before their sweep (SweepsDue): a sweep runs once the longest
	// waiting has waited that long, or a batch is due. Zero: at the next enqueue.
	SweepGather time.Duration
	// CheckTimeout bounds one check's job (CheckRunsAtMost when zero, and never more).
	CheckTimeout time.Duration
	// InFlightMargin is how long after its timeout an attempt may still execute at the
	// processor: no charge is resolved by hand before that (DefaultInFlightMargin when zero).
	InFlightMargin time.Duration
	// Replay, when set, lets a check send a pending charge's request again under its own
	// key when the reads found nothing and CanReplay allows it. A check then writes, so
	// River runs it once. Nil: reads only.
	Replay Writer
	Log    *zap.Logger
}

// Janitor is paygate's payment janitor (after Kill Bill's IncompletePaymentTransactionTask,
// which re-checks UNKNOWN and PENDING payments on a schedule and never fails them by
// guesswork): reconciliation in the background, on River, safe with several replicas. A
// periodic sweep (run by the leading replica) enqueues one job per due charge, unique per
// charge, on the reconcile queue; each job runs one check of the charge. It also runs the
// checks and the resolutions operators ask for.
type Janitor struct {
	store          JanitorStore
	rec            *Reconciler
	caps           decline.Caps
	inFlightMargin time.Duration
	checkTimeout   time.Duration
	log            *zap.Logger
	queue          Inserter
	checks         *prometheus.CounterVec
	sweepBatch     int
	sweepGather    time.Duration
	sweeps         sweepMetrics
}

// NewJanitor returns a janitor and registers its jobs on reg: the periodic sweep and the
// per-charge check. Call Attach with the queue once it exists.
func NewJanitor(cfg JanitorConfig, reg *jobs.Registry) (*Janitor, error) {
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	if cfg.SweepEvery <= 0 {
		cfg.SweepEvery = 5 * time.Second
	}
	if cfg.CheckTimeout <= 0 || cfg.CheckTimeout > CheckRunsAtMost {
		cfg.CheckTimeout = CheckRunsAtMost
	}
	j := &Janitor{store: cfg.Store, caps: cfg.Reconciler.Caps, inFlightMargin: cfg.InFlightMargin,
		checkTimeout: cfg.CheckTimeout, log: cfg.Log,
		checks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "paygate", Name: "reconciliation_checks_total",
			Help: "Reconciliation checks by decision (resolve, pending, review) and path (retrieve, list, search, absence).",
		}, []string{"kind", "path"}),
		sweepBatch: cfg.SweepBatch, sweepGather: max(cfg.SweepGather, 0), sweeps: newSweepMetrics()}
	if j.sweepBatch <= 0 {
		j.sweepBatch = DefaultSweepBatch
	}
	rc := cfg.Reconciler
	rc.Store = cfg.Store
	policy := jobs.Retryable(5) // a check that only reads may run again
	if cfg.Replay != nil {
		rc.Replayer = replayer{store: cfg.Store, writer: cfg.Replay}
		policy = jobs.WriteOnce()
	}
	if rc.Log == nil {
		rc.Log = cfg.Log
	}
	rec, err := New(rc)
	if err != nil {
		return nil, err
	}
	j.rec = rec
	if err := jobs.Add(reg, &checkWorker{j: j}, policy.InQueue(jobs.QueueReconcile)); err != nil {
		return nil, err
	}
	if err := jobs.Add(reg, &accountSweepWorker{j: j}, policy.InQueue(jobs.QueueReconcile)); err != nil {
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

// Sweep enqueues the checks of the charges due one: a check per charge whose PaymentIntent id
// is known (or that names no processor account), once per charge, and a sweep per processor
// account of the others (AccountSweepArgs) once SweepsDue says so, once per account; it
// returns how many jobs it enqueued.
func (j *Janitor) Sweep(ctx context.Context) (int, error) {
	if j.queue == nil {
		return 0, errors.New("reconcile: janitor: no queue attached")
	}
	due, err := j.store.DueReconciliations(ctx, 1000)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, d := range due {
		if d.Swept() {
			continue
		}
		opts, err := jobs.ForMerchant(&river.InsertOpts{Queue: jobs.QueueReconcile, UniqueOpts: jobs.UniquePerArgs()}, d.MerchantID)
		if err != nil {
			return n, err
		}
		ins, err := j.queue.Insert(ctx, CheckArgs{ChargeID: d.ChargeID}, opts)
		if err != nil {
			return n, fmt.Errorf("reconcile: enqueue check of %s: %w", d.ChargeID, err)
		}
		if !ins.Duplicate {
			n++
		}
	}
	for _, a := range SweepsDue(due, j.sweepGather, j.sweepBatch) {
		// A sweep works for every merchant whose charges it checks: it is housekeeping.
		ins, err := j.queue.Insert(ctx, AccountSweepArgs{Account: a}, &river.InsertOpts{Queue: jobs.QueueReconcile, UniqueOpts: jobs.UniquePerArgs()})
		if err != nil {
			return n, fmt.Errorf("reconcile: enqueue the sweep of %s: %w", a, err)
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

func (w *checkWorker) Timeout(*river.Job[CheckArgs]) time.Duration { return w.j.checkTimeout }

func (w *checkWorker) Work(ctx context.Context, job *river.Job[CheckArgs]) error {
	_, err := w.j.Check(ctx, job.Args.ChargeID)
	return err
}

// Check runs one reconciliation check of a charge now and records it. A check another
// replica recorded first is not an error; a charge settled meanwhile gets no check (the
// zero Check).
func (j *Janitor) Check(ctx context.Context, chargeID string) (Check, error) {
	target, err := j.store.ReconcileTarget(ctx, chargeID)
	if err != nil {
		return Check{}, err
	}
	if target.Status != charge.StatusPending && target.Charge.Manual == "" {
		return Check{}, nil // settled meanwhile
	}
	chk, err := j.rec.Reconcile(ctx, target.Charge)
	if errors.Is(err, ErrStale) {
		return chk, nil
	}
	if err != nil {
		return chk, fmt.Errorf("reconcile: janitor: %s: %w", chargeID, err)
	}
	j.checks.WithLabelValues(string(chk.Decision.Kind), string(chk.Decision.Path)).Inc()
	j.log.Info("reconciliation check", zap.String("charge_id", chargeID), zap.Int("check", chk.N),
		zap.String("kind", string(chk.Decision.Kind)), zap.String("path", string(chk.Decision.Path)),
		zap.String("reason", string(chk.Decision.Reason)))
	return chk, nil
}

// Resolve settles a charge by hand, as an operator asks (see the function Resolve), under
// the janitor's in-flight margin, a decline's verdict under its network caps.
func (j *Janitor) Resolve(ctx context.Context, m ManualResolution) (*charge.Charge, error) {
	m.Caps, m.InFlightMargin = j.caps, j.inFlightMargin
	return Resolve(ctx, j.store, m)
}
