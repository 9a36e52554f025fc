package reconcile

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"go.uber.org/zap"

	"github.com/paygate/paygate/charge"
)

// DefaultSweepBatch is how many due charges one sweep of an account checks at most.
const DefaultSweepBatch = 1000

// sweepLease is how long a sweep's claim on its charges lasts, for a sweep bounded by
// timeout: twice that, so that a sweep still running keeps its charges, and one whose replica
// died leaves them due again soon after its job would have ended.
func sweepLease(timeout time.Duration) time.Duration { return 2 * timeout }

// AccountSweepArgs is the job that sweeps one processor account: the due charges whose
// PaymentIntent id is unknown, checked together (Reconciler.Sweep). Unique per account.
type AccountSweepArgs struct {
	Account string `json:"account" river:"unique"`
}

// Kind implements river.JobArgs.
func (AccountSweepArgs) Kind() string { return "reconcile_account_sweep" }

type accountSweepWorker struct {
	river.WorkerDefaults[AccountSweepArgs]
	j *Janitor
}

func (w *accountSweepWorker) Timeout(*river.Job[AccountSweepArgs]) time.Duration {
	return w.j.checkTimeout
}

func (w *accountSweepWorker) Work(ctx context.Context, job *river.Job[AccountSweepArgs]) error {
	_, err := w.j.SweepAccount(ctx, job.Args.Account)
	return err
}

// sweepMetrics count the sweeps, the list pages they read and the checks they recorded: the
// pages read per settled charge is sweep_pages_total over sweep_checks_total{kind="resolve"}.
type sweepMetrics struct {
	sweeps *prometheus.CounterVec
	pages  prometheus.Counter
	checks *prometheus.CounterVec
}

func newSweepMetrics() sweepMetrics {
	m := sweepMetrics{
		sweeps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "paygate", Name: "reconciliation_sweeps_total",
			Help: "Sweeps of a processor account's due charges whose PaymentIntent id is unknown, by result (done, failed).",
		}, []string{"result"}),
		pages: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "paygate", Name: "reconciliation_sweep_pages_total",
			Help: "List pages read by sweeps.",
		}),
		checks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "paygate", Name: "reconciliation_sweep_checks_total",
			Help: "Checks recorded by sweeps, by decision (resolve, pending, review): list pages per settled charge is sweep_pages_total / sweep_checks_total{kind=\"resolve\"}.",
		}, []string{"kind"}),
	}
	for _, r := range []string{"done", "failed"} {
		m.sweeps.WithLabelValues(r)
	}
	for _, k := range []Kind{KindResolve, KindPending, KindReview} {
		m.checks.WithLabelValues(string(k))
	}
	return m
}

func (m sweepMetrics) register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.sweeps, m.pages, m.checks} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}

// SweepAccount sweeps processor account now: it claims up to the batch of its due charges
// whose PaymentIntent id is unknown (ClaimSweep, for twice the job's timeout),
// and checks them together (Reconciler.Sweep). A charge settled since it was claimed gets no
// check. The checks recorded before an error stand; the other claimed charges are due again
// when the lease ends.
func (j *Janitor) SweepAccount(ctx context.Context, account string) (SweepResult, error) {
	ids, err := j.store.ClaimSweep(ctx, account, j.sweepBatch, sweepLease(j.checkTimeout))
	if err != nil || len(ids) == 0 {
		return SweepResult{}, err
	}
	cs := make([]Charge, 0, len(ids))
	for _, id := range ids {
		t, err := j.store.ReconcileTarget(ctx, id)
		if err != nil {
			return SweepResult{}, err
		}
		if t.Status != charge.StatusPending && t.Charge.Manual == "" {
			continue // settled meanwhile
		}
		cs = append(cs, t.Charge)
	}
	start := time.Now()
	res, err := j.rec.Sweep(ctx, cs)
	j.sweeps.pages.Add(float64(res.Pages))
	for _, chk := range res.Checks {
		j.sweeps.checks.WithLabelValues(string(chk.Decision.Kind)).Inc()
		j.checks.WithLabelValues(string(chk.Decision.Kind), string(chk.Decision.Path)).Inc()
	}
	fields := []zap.Field{zap.String("account", account), zap.Int("claimed", len(ids)), zap.Int("checked", len(res.Checks)),
		zap.Int("settled", res.Settled()), zap.Int("stale", res.Stale), zap.Int("spans", res.Spans), zap.Int("pages", res.Pages),
		zap.Duration("took", time.Since(start))}
	if err != nil {
		j.sweeps.sweeps.WithLabelValues("failed").Inc()
		j.log.Warn("reconciliation sweep stopped", append(fields, zap.Error(err))...)
		return res, fmt.Errorf("reconcile: janitor: sweep of %s: %w", account, err)
	}
	j.sweeps.sweeps.WithLabelValues("done").Inc()
	j.log.Info("reconciliation sweep", fields...)
	return res, nil
}
