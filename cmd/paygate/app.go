package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"
	"golang.org/x/time/rate"

	"github.com/paygate/paygate/api"
	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/event"
	"github.com/paygate/paygate/internal/sim"
	"github.com/paygate/paygate/jobs"
	"github.com/paygate/paygate/migrations"
	"github.com/paygate/paygate/processor"
	"github.com/paygate/paygate/reconcile"
	"github.com/paygate/paygate/retry"
	"github.com/paygate/paygate/store"
)

// app is one `paygate serve` process: its configuration, its listeners, and the subsystems
// wired from them. Run opens and starts everything and returns once it serves; Close stops
// it gracefully, in the reverse order.
type app struct {
	cfg config
	lns *listeners
	log *zap.Logger

	// ctx is the process's own: Close cancels it, which stops the watch of the processor's
	// account, the fleet's syncs, the completer and the metrics server.
	ctx    context.Context
	cancel context.CancelFunc
	// failed receives the error of a server that stopped by itself.
	failed chan error
	// serving reports that Run returned with everything started.
	serving bool

	db        *store.DB
	reads     *standbyReads
	stopSim   context.CancelFunc // nil without the built-in simulator
	proc      *processor.Client
	accounts  *processor.AccountWatch
	account   string // the processor account at start-up
	registry  *prometheus.Registry
	guards    *guards
	charges   *charge.Service
	completed <-chan struct{} // closed when the completer has stopped
	janitor   *reconcile.Janitor
	webhooks  *reconcile.Webhooks
	queue     *jobs.Queue
	// dispatched is closed when the events' dispatcher has stopped.
	dispatched <-chan struct{}
	http       *http.Server

	closers []func() // run last, in reverse order
}

// newApp returns the process of cfg on lns, logging to log; nothing runs before Run.
func newApp(cfg config, lns *listeners, log *zap.Logger) *app {
	return &app{cfg: cfg, lns: lns, log: log, failed: make(chan error, 2)}
}

// Run wires and starts every subsystem, in order: the database, the processor (and the
// built-in simulator), the charge engine, the background work, and the HTTP servers. It
// returns once the API serves, or with the first error; call Close in either case.
func (a *app) Run(ctx context.Context) error {
	a.ctx, a.cancel = context.WithCancel(ctx)
	for _, start := range []func() error{a.openDatabase, a.startProcessor, a.startCharges, a.startJobs, a.startHTTP} {
		if err := start(); err != nil {
			return err
		}
	}
	a.serving = true
	a.log.Info("paygate serving", zap.String("addr", a.lns.api.Addr().String()), zap.String("processor", a.cfg.Processor),
		zap.String("processor_account", a.account), zap.String("sim_addr", a.simAddr()),
		zap.Bool("webhooks", a.cfg.WebhookSecret != ""))
	return nil
}

// Failed returns the errors of servers that stopped by themselves.
func (a *app) Failed() <-chan error { return a.failed }

// simAddr is the built-in simulator's address; empty without it.
func (a *app) simAddr() string {
	if a.stopSim == nil {
		return ""
	}
	return a.lns.sim.Addr().String()
}

// openDatabase checks that the schema is current and opens the database, with the read
// database of reports and review lists.
func (a *app) openDatabase() error {
	cfg := a.cfg
	st, err := migrations.Versions(a.ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	if st.Pending() {
		return fmt.Errorf("paygate: database schema at version %d, this binary needs %d: run `paygate migrate`", st.Current, st.Target)
	}
	a.db, err = store.Open(a.ctx, cfg.DatabaseURL, store.Config{MaxConns: cfg.DBMaxConns, FirstCheckAfter: cfg.ReconcileSchedule[0]})
	if err != nil {
		return err
	}
	a.closers = append(a.closers, a.db.Close)
	reads, closeReads, err := openReads(a.ctx, cfg, a.db, a.log.Named("store"))
	if err != nil {
		return err
	}
	a.reads = reads
	a.closers = append(a.closers, closeReads)
	return nil
}

// startProcessor starts the built-in simulator over real HTTP (PAYGATE_PROCESSOR=sim), or
// points at Stripe (or stripe-mock, or an external simulator) at STRIPE_API_BASE, and reads
// the processor's account.
func (a *app) startProcessor() error {
	cfg := a.cfg
	baseURL, key := cfg.StripeAPIBase, cfg.StripeKey
	if cfg.Processor == "sim" {
		var account string
		if cfg.SimAccountFile != "" {
			var err error
			if account, err = sim.AccountFromFile(cfg.SimAccountFile); err != nil {
				return &configError{Var: "PAYGATE_SIM_ACCOUNT_FILE", Msg: err.Error()}
			}
		}
		s := sim.New(sim.Config{AccountID: account, SecretKey: simSecretKey, Logger: a.log.Named("sim")})
		// The simulator outlives the API's shutdown, which lets requests in flight finish.
		simCtx, stop := context.WithCancel(context.WithoutCancel(a.ctx))
		a.stopSim = stop
		if err := wireSimWebhooks(simCtx, &a.cfg, s, a.lns.api.Addr(), a.log); err != nil {
			return err
		}
		go func() {
			if err := s.Serve(simCtx, a.lns.sim); err != nil {
				a.failed <- fmt.Errorf("paygate: simulator: %w", err)
			}
		}()
		baseURL, key = "http://"+a.lns.sim.Addr().String(), simSecretKey
	}
	proc, err := processor.New(processor.Config{SecretKey: key, BaseURL: baseURL, Log: a.log.Named("processor")})
	if err != nil {
		return err
	}
	acctCtx, cancel := context.WithTimeout(a.ctx, 10*time.Second)
	a.account, err = proc.Account(acctCtx)
	cancel()
	if err != nil {
		return processorError(cfg, err)
	}
	// The processor behind the API base may change account while serve runs (an external
	// simulator restarted without --account): the watch reads it again periodically and
	// after every connection that failed, new charges are recorded at its account, and
	// nothing is sent, replayed or reconciled under an existing charge's key before the
	// processor confirmed the charge's account.
	a.accounts = processor.NewAccountWatch(proc, a.account, processor.WatchConfig{Every: cfg.AccountRefresh, Fresh: cfg.AccountFresh,
		Log: a.log.Named("processor"), OnChange: proc.ForgetCards})
	proc.OnConnectionFailure(a.accounts.MarkStale)
	go a.accounts.Run(a.ctx)
	a.proc = proc
	return nil
}

// startCharges wires the charge engine: the retry budget and breakers (per process or for the
// fleet), the retry-loop runner, the engine and the completer of charges left mid-flight,
// which every replica runs (the store's row locks keep two replicas off one charge).
func (a *app) startCharges() error {
	cfg := a.cfg
	a.registry = prometheus.NewRegistry()
	a.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	var err error
	if a.guards, err = newGuards(cfg, a.db, a.log.Named("fleet"), a.registry); err != nil {
		return err
	}
	go a.guards.run(a.ctx)
	runner := charge.NewRunner(charge.RunnerConfig{
		Processor: a.proc,
		Accounts:  a.accounts,
		Policy:    retry.DefaultPolicy(),
		Guards:    a.guards,
		Observer:  charge.NewMetrics(a.registry),
		Log:       a.log.Named("charge"),
	})
	a.charges = charge.NewService(charge.ServiceConfig{Store: a.db, Runner: runner, Render: api.RenderCharge,
		Cards: a.proc, Caps: a.caps(), Log: a.log.Named("charge"), LockMargin: cfg.KeyLockMargin})
	completer := charge.NewCompleter(a.charges, charge.CompleterConfig{Every: cfg.CompleterInterval, Idle: cfg.CompleterIdle})
	done := make(chan struct{})
	go func() {
		defer close(done)
		completer.Run(a.ctx)
	}()
	a.completed = done
	return nil
}

// caps are the card networks' reattempt caps of the configuration.
func (a *app) caps() decline.Caps { return decline.Caps{VisaReattempts30d: a.cfg.VisaReattempts30d} }

// startJobs wires the durable background work on River and starts the queue: the reaper of
// expired idempotency keys, reconciliation of unknown outcomes (the janitor), and the
// automatic reattempt chains.
func (a *app) startJobs() error {
	cfg := a.cfg
	registry := jobs.NewRegistry()
	if err := jobs.AddKeyReaper(registry, a.log.Named("jobs"), time.Hour, func(ctx context.Context) (int, error) {
		n, err := a.db.ReapKeys(ctx, keyRetention)
		return int(n), err
	}); err != nil {
		return err
	}
	reads, err := newCountedReads(a.proc, a.registry)
	if err != nil {
		return err
	}
	var replay reconcile.Writer
	if cfg.ReconcileReplay {
		replay = a.proc
	}
	a.janitor, err = reconcile.NewJanitor(reconcile.JanitorConfig{
		Store:          a.db,
		Replay:         replay,
		InFlightMargin: cfg.InFlightMargin,
		CheckTimeout:   cfg.JobTimeout,
		Reconciler: reconcile.Config{
			Accounts:      a.accounts,
			Reads:         reads,
			ReadLimiter:   rate.NewLimiter(rate.Limit(cfg.ReadRate), max(1, int(cfg.ReadRate/10))),
			SearchLimiter: rate.NewLimiter(rate.Limit(cfg.SearchRate), max(1, int(cfg.SearchRate/10))),
			Policy:        reconcile.Policy{Schedule: cfg.ReconcileSchedule},
			// The 24 h rule is judged on the database's clock, whichever replica's runs.
			Now:  a.db.Clock(10 * time.Second),
			Caps: a.caps(),
		},
		SweepEvery:  cfg.ReconcileSweep,
		SweepGather: cfg.ReconcileSweepGather,
		Log:         a.log.Named("janitor"),
	}, registry)
	if err != nil {
		return err
	}
	if a.webhooks, err = newWebhooks(a.db, registry, a.registry, a.log.Named("webhooks")); err != nil {
		return err
	}
	auto, err := charge.NewAutoChains(charge.AutoChainsConfig{Service: a.charges, Store: a.db, SweepEvery: cfg.ReconcileSweep,
		StepTimeout: cfg.JobTimeout, Log: a.log.Named("reattempts")}, registry)
	if err != nil {
		return err
	}
	eventMetrics, err := event.NewMetrics(a.registry, a.db.OldestUndelivered)
	if err != nil {
		return err
	}
	deliverer := event.NewDeliverer(event.DelivererConfig{Store: a.db, Render: api.ChargeObject(a.charges, a.db),
		Schedule: cfg.EventSchedule, AllowHTTP: cfg.WebhookAllowHTTP, Metrics: eventMetrics, Log: a.log.Named("events")})
	if err := deliverer.Register(registry); err != nil {
		return err
	}
	a.queue, err = jobs.New(a.db.Pool(), a.log.Named("jobs"), registry, jobs.Config{ReplayGuard: replayGuard,
		JobTimeout: cfg.JobTimeout, RescueStuckJobsAfter: cfg.JobRescueAfter, ReconcileWorkers: reconcileWorkers})
	if err != nil {
		return err
	}
	a.janitor.Attach(a.queue)
	auto.Attach(a.queue)
	a.webhooks.Attach(a.queue)
	if err := a.queue.RegisterMetrics(a.registry); err != nil {
		return err
	}
	if err := a.janitor.RegisterMetrics(a.registry, a.db); err != nil {
		return err
	}
	if err := a.queue.Start(context.WithoutCancel(a.ctx)); err != nil {
		return fmt.Errorf("paygate: job queue: %w", err)
	}
	dispatcher := event.NewDispatcher(event.DispatcherConfig{Store: a.db, Queue: a.queue, Every: cfg.EventDispatch,
		Log: a.log.Named("events")})
	done := make(chan struct{})
	go func() {
		defer close(done)
		dispatcher.Run(a.ctx)
	}()
	a.dispatched = done
	return nil
}

// startHTTP serves the API on PAYGATE_ADDR and the metrics on PAYGATE_METRICS_ADDR.
func (a *app) startHTTP() error {
	handler := api.New(api.Config{
		Log:         a.log.Named("http"),
		Auth:        api.NewCachedAuth(a.db, keyCacheTTL, 10000),
		Ready:       readiness{a.db},
		Jobs:        a.queue,
		Review:      a.reads,
		Recon:       a.janitor,
		Reports:     newReports(a.reads, a.cfg),
		Charges:     a.charges,
		Limits:      charge.Limits{MaxAmount: a.cfg.MaxAmount},
		Unavailable: store.Unavailable,
		Registry:    a.registry,
		Webhooks:    api.WebhookConfig{Secret: a.cfg.WebhookSecret, Receiver: a.webhooks},
		Events:      api.EventsConfig{Store: a.db, AllowHTTP: a.cfg.WebhookAllowHTTP},
	})
	a.http = &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      90 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          zap.NewStdLog(a.log.Named("http")),
	}
	startMetricsServer(a.ctx, a.log, a.lns.metrics, a.registry)
	go func() {
		if err := a.http.Serve(a.lns.api); !errors.Is(err, http.ErrServerClosed) {
			a.failed <- fmt.Errorf("paygate: http server: %w", err)
		}
	}()
	return nil
}

// Close stops the process gracefully: the API stops accepting and lets the requests in flight
// store their outcomes (within PAYGATE_SHUTDOWN_TIMEOUT), the completer's pass finishes, the
// job queue lets its running jobs finish, the fleet gets back the retry tokens this replica
// holds, then the simulator and the database close. It returns the API's shutdown error.
func (a *app) Close() error {
	if a.cancel == nil {
		return nil // never run
	}
	a.cancel()
	if a.serving {
		a.log.Info("paygate shutting down", zap.Duration("timeout", a.cfg.ShutdownTimeout))
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.ShutdownTimeout)
	defer cancel()
	var err error
	if a.http != nil {
		if err = a.http.Shutdown(ctx); err != nil {
			err = fmt.Errorf("paygate: shutdown: %w", err)
		}
	}
	if a.completed != nil {
		<-a.completed
	}
	if a.dispatched != nil {
		<-a.dispatched
	}
	if a.queue != nil {
		if qerr := a.queue.Stop(ctx); qerr != nil {
			a.log.Warn("job queue stop", zap.Error(qerr))
		}
	}
	if a.guards != nil {
		a.guards.close(ctx, a.log)
	}
	if a.stopSim != nil {
		a.stopSim()
	}
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
	if a.serving && err == nil {
		a.log.Info("paygate stopped")
	}
	return err
}
