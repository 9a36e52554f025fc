package jobs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
	"go.uber.org/zap"
)

// Queue names.
const (
	// QueueDefault is the queue of every kind whose policy names no other.
	QueueDefault = river.QueueDefault
	// QueueReconcile is the queue of reconciliation jobs, with a concurrency of its own so
	// that processor reads never take the workers charges need.
	QueueReconcile = "reconcile"
)

// Defaults of Config.
const (
	DefaultWorkers       = 10                  // jobs of QueueDefault at once, per replica
	DefaultReconcilers   = 5                   // jobs of QueueReconcile at once, per replica
	DefaultJobTimeout    = time.Minute         // bound of one attempt
	DefaultRescueMargin  = 5 * time.Minute     // added to JobTimeout before a running job is taken for stuck
	DefaultStopTimeout   = 20 * time.Second    // running jobs' time to finish on Stop
	DefaultDeadRetention = 30 * 24 * time.Hour // how long dead letters are kept
)

// Config configures a Queue. The zero value is usable: every field has a default.
type Config struct {
	// DefaultWorkers is how many jobs of QueueDefault one replica runs at once.
	// Default DefaultWorkers.
	DefaultWorkers int
	// ReconcileWorkers is how many jobs of QueueReconcile one replica runs at once.
	// Default DefaultReconcilers.
	ReconcileWorkers int
	// JobTimeout bounds one attempt of a job (its context is cancelled after it); a worker
	// may set its own through River's Worker.Timeout. It must be finite: a stuck job is
	// only rescued once its timeout has passed. Default DefaultJobTimeout.
	JobTimeout time.Duration
	// RescueStuckJobsAfter is how long a job may stay running before the leading replica
	// takes it for stuck (its replica died): a Retryable job is then retried, a WriteOnce
	// job discarded into the dead letters. It must exceed JobTimeout. Default JobTimeout +
	// DefaultRescueMargin.
	RescueStuckJobsAfter time.Duration
	// StopTimeout is how long Stop lets running jobs finish before cancelling their
	// contexts. Default DefaultStopTimeout.
	StopTimeout time.Duration
	// DeadRetention is how long dead letters are kept before River deletes them; -1 keeps
	// them forever. Default DefaultDeadRetention.
	DeadRetention time.Duration
	// ReplayGuard, when set, is asked before every Replay. A job kind that writes to the
	// processor is never replayed without one.
	ReplayGuard ReplayGuard

	// testOnly turns off River's start-up jitter of its maintenance services.
	testOnly bool
	// leaderElectionDisabled keeps a replica from leading (tests only: a replica that
	// must not rescue or schedule).
	leaderElectionDisabled bool
}

func (c Config) withDefaults() Config {
	if c.DefaultWorkers <= 0 {
		c.DefaultWorkers = DefaultWorkers
	}
	if c.ReconcileWorkers <= 0 {
		c.ReconcileWorkers = DefaultReconcilers
	}
	if c.JobTimeout <= 0 {
		c.JobTimeout = DefaultJobTimeout
	}
	if c.RescueStuckJobsAfter <= 0 {
		c.RescueStuckJobsAfter = c.JobTimeout + DefaultRescueMargin
	}
	if c.StopTimeout <= 0 {
		c.StopTimeout = DefaultStopTimeout
	}
	if c.DeadRetention == 0 {
		c.DeadRetention = DefaultDeadRetention
	}
	return c
}

// Queue is paygate's durable job queue: a River client on the shared database that
// inserts jobs (inside the caller's transaction when asked), works them on this replica
// once started, and keeps the dead letters.
type Queue struct {
	client   *river.Client[pgx.Tx]
	pool     *pgxpool.Pool
	policies *policies
	guard    ReplayGuard
	log      *zap.Logger

	mu      sync.Mutex
	started bool
}

// New returns a Queue on pool working the kinds in reg. It does not start working: Start
// does. It returns an error for an invalid configuration (RescueStuckJobsAfter not above
// JobTimeout, an empty registry).
func New(pool *pgxpool.Pool, log *zap.Logger, reg *Registry, cfg Config) (*Queue, error) {
	if log == nil {
		log = zap.NewNop()
	}
	cfg = cfg.withDefaults()
	if cfg.RescueStuckJobsAfter <= cfg.JobTimeout {
		return nil, fmt.Errorf("jobs: RescueStuckJobsAfter %s must exceed JobTimeout %s", cfg.RescueStuckJobsAfter, cfg.JobTimeout)
	}
	if reg == nil || len(reg.policies.byKind) == 0 {
		return nil, errors.New("jobs: the registry has no job kinds")
	}
	q := &Queue{pool: pool, policies: reg.policies, guard: cfg.ReplayGuard, log: log}
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		Queues: map[string]river.QueueConfig{
			QueueDefault:   {MaxWorkers: cfg.DefaultWorkers},
			QueueReconcile: {MaxWorkers: cfg.ReconcileWorkers},
		},
		Workers:      reg.workers,
		PeriodicJobs: reg.periodic,
		// A kind with no policy gets a single attempt; registered kinds get theirs from
		// the middleware.
		MaxAttempts:                 1,
		Middleware:                  []rivertype.Middleware{&attemptsMiddleware{policies: reg.policies}},
		ErrorHandler:                &errorHandler{log: log},
		JobTimeout:                  cfg.JobTimeout,
		RescueStuckJobsAfter:        cfg.RescueStuckJobsAfter,
		SoftStopTimeout:             cfg.StopTimeout,
		DiscardedJobRetentionPeriod: cfg.DeadRetention,
		Logger:                      newSlogLogger(log.Named("river")),
		LeaderElectionDisabled:      cfg.leaderElectionDisabled,
		TestOnly:                    cfg.testOnly,
	})
	if err != nil {
		return nil, fmt.Errorf("jobs: River client: %w", err)
	}
	q.client = client
	return q, nil
}

// Start starts working jobs on this replica, in the background, and returns. Any number of
// replicas may run on one database: River hands each job to one of them, and one elected
// leader at a time runs scheduling, periodic jobs, the rescue of stuck jobs and cleanup.
// Cancelling ctx begins the same graceful stop as Stop.
func (q *Queue) Start(ctx context.Context) error {
	if err := q.client.Start(ctx); err != nil {
		return fmt.Errorf("jobs: start: %w", err)
	}
	q.mu.Lock()
	q.started = true
	q.mu.Unlock()
	q.log.Info("job queue started", zap.String("client_id", q.client.ID()))
	return nil
}

// Stop stops fetching jobs and waits for the running ones: they have StopTimeout to
// finish, then their contexts are cancelled (a cancelled Retryable job is retried later by
// any replica; a cancelled WriteOnce job becomes a dead letter). Stop returns when all
// have returned, or with ctx's error when ctx ends first; then it cancels what still runs
// without waiting further. Stopping a queue never started is a no-op.
func (q *Queue) Stop(ctx context.Context) error {
	q.mu.Lock()
	started := q.started
	q.started = false
	q.mu.Unlock()
	if !started {
		return nil
	}
	stopped := q.client.Stopped()
	if err := q.client.Stop(ctx); err != nil {
		hardCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = q.client.StopAndCancel(hardCtx)
		return fmt.Errorf("jobs: stop: %w", err)
	}
	// Stop returns at once when a cancelled Start context already began the stop.
	select {
	case <-stopped:
	case <-ctx.Done():
		return fmt.Errorf("jobs: stop: %w", ctx.Err())
	}
	q.log.Info("job queue stopped", zap.String("client_id", q.client.ID()))
	return nil
}

// Client returns the underlying River client, for River features this package does not
// wrap. Inserts through it still get each kind's attempts, but not its policy's queue.
func (q *Queue) Client() *river.Client[pgx.Tx] { return q.client }
