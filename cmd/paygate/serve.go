package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"go.uber.org/zap"
	"golang.org/x/time/rate"

	"github.com/paygate/paygate/api"
	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/janitor"
	"github.com/paygate/paygate/jobs"
	"github.com/paygate/paygate/processor"
	"github.com/paygate/paygate/reattempts"
	"github.com/paygate/paygate/reconcile"
	"github.com/paygate/paygate/retry"
	"github.com/paygate/paygate/sim"
	"github.com/paygate/paygate/store"
)

// keyCacheTTL is how long an authenticated key is remembered: a revoked key stops working
// within it on every replica.
const keyCacheTTL = 10 * time.Second

// simSecretKey is the key the gateway presents to its built-in simulator.
const simSecretKey = "sk_test_paygate_simulator"

// serveHooks lets whole-program tests learn the addresses a server bound.
type serveHooks struct {
	listening func(apiAddr, simAddr string)
}

func runServe(ctx context.Context, args []string, stderr io.Writer, getenv func(string) string, hooks *serveHooks) error {
	if len(args) != 0 {
		return &usageError{"serve takes no arguments; configure it through the environment"}
	}
	cfg, err := loadConfig(getenv, true)
	if err != nil {
		return err
	}
	log := newLogger(cfg.LogLevel, stderr)
	defer log.Sync() //nolint:errcheck

	st, err := store.Migrations(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	if st.Pending() {
		return fmt.Errorf("paygate: database schema at version %d, this binary needs %d: run `paygate migrate`", st.Current, st.Target)
	}
	db, err := store.Open(ctx, cfg.DatabaseURL, store.Config{MaxConns: cfg.DBMaxConns, FirstCheckAfter: cfg.ReconcileSchedule[0]})
	if err != nil {
		return err
	}
	defer db.Close()

	// The processor: the built-in simulator over real HTTP, or Stripe (or stripe-mock, or
	// an external simulator) at STRIPE_API_BASE.
	var (
		simAddr string
		simDone = make(chan error, 1)
		baseURL = cfg.StripeAPIBase
		key     = cfg.StripeKey
	)
	simCtx, stopSim := context.WithCancel(context.WithoutCancel(ctx))
	defer stopSim()
	if cfg.Processor == "sim" {
		ln, err := net.Listen("tcp", cfg.SimAddr)
		if err != nil {
			return fmt.Errorf("paygate: PAYGATE_SIM_ADDR: %w", err)
		}
		simAddr = ln.Addr().String()
		s := sim.New(sim.Config{SecretKey: simSecretKey, Logger: log.Named("sim")})
		go func() { simDone <- s.Serve(simCtx, ln) }()
		baseURL, key = "http://"+simAddr, simSecretKey
	} else {
		close(simDone)
	}

	proc, err := processor.New(processor.Config{SecretKey: key, BaseURL: baseURL, Log: log.Named("processor")})
	if err != nil {
		return err
	}
	acctCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	account, err := proc.Account(acctCtx)
	cancel()
	if err != nil {
		return fmt.Errorf("paygate: cannot reach the processor: %w", err)
	}

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	budgets, err := retry.NewBudgets(retry.DefaultScopeBudget(), retry.DefaultGlobalBudget())
	if err != nil {
		return err
	}
	circuits, err := retry.NewCircuits(retry.DefaultBreakerConfig())
	if err != nil {
		return err
	}
	runner := charge.NewRunner(charge.RunnerConfig{
		Processor: proc,
		Account:   account,
		Policy:    retry.DefaultPolicy(),
		Guards:    charge.ProcessGuards{Budgets: budgets, Circuits: circuits},
		Observer:  charge.NewMetrics(reg),
		Log:       log.Named("charge"),
	})
	charges := charge.NewService(charge.ServiceConfig{Store: db, Runner: runner, Render: api.RenderCharge,
		Cards: proc, Caps: decline.Caps{VisaReattempts30d: cfg.VisaReattempts30d},
		Log: log.Named("charge"), LockMargin: cfg.KeyLockMargin})
	workersDone := startWorkers(ctx, log.Named("worker"), cfg, charges)

	// Durable background work on River: reconciliation of unknown outcomes and the reaper
	// of expired idempotency keys.
	registry := jobs.NewRegistry()
	if err := jobs.AddKeyReaper(registry, log.Named("jobs"), time.Hour, func(ctx context.Context) (int, error) {
		n, err := db.ReapKeys(ctx, keyRetention)
		return int(n), err
	}); err != nil {
		return err
	}
	var replay janitor.Writer
	if cfg.ReconcileReplay {
		replay = proc
	}
	jan, err := janitor.New(janitor.Config{
		Store:  db,
		Replay: replay,
		Reconciler: reconcile.Config{
			Account:       account,
			Reads:         proc,
			ReadLimiter:   rate.NewLimiter(rate.Limit(cfg.ReadRate), max(1, int(cfg.ReadRate/10))),
			SearchLimiter: rate.NewLimiter(rate.Limit(cfg.SearchRate), max(1, int(cfg.SearchRate/10))),
			Policy:        reconcile.Policy{Schedule: cfg.ReconcileSchedule},
			// The 24 h rule is judged on the database's clock, whichever replica's runs.
			Now: db.Clock(10 * time.Second),
		},
		Caps:       decline.Caps{VisaReattempts30d: cfg.VisaReattempts30d},
		SweepEvery: cfg.ReconcileSweep,
		Log:        log.Named("janitor"),
	}, registry)
	if err != nil {
		return err
	}
	auto, err := reattempts.New(db, charges, log.Named("reattempts"), registry, cfg.ReconcileSweep)
	if err != nil {
		return err
	}
	queue, err := jobs.New(db.Pool(), log.Named("jobs"), registry, jobs.Config{ReplayGuard: replayGuard})
	if err != nil {
		return err
	}
	jan.Attach(queue)
	auto.Attach(queue)
	if err := queue.RegisterMetrics(reg); err != nil {
		return err
	}
	if err := jan.RegisterMetrics(reg, db); err != nil {
		return err
	}
	if err := queue.Start(context.WithoutCancel(ctx)); err != nil {
		return fmt.Errorf("paygate: job queue: %w", err)
	}

	handler := api.New(api.Config{
		Log:      log.Named("http"),
		Auth:     api.NewCachedAuth(db, keyCacheTTL, 10000),
		Ready:    readiness{db},
		Jobs:     queue,
		Review:   db,
		Recon:    jan,
		Reports:  newReports(db, cfg),
		Charges:  charges,
		Limits:   charge.Limits{MaxAmount: cfg.MaxAmount},
		Registry: reg,
	})
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("paygate: PAYGATE_ADDR: %w", err)
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      90 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          zap.NewStdLog(log.Named("http")),
	}
	if cfg.DebugAddr != "" {
		startDebugServer(ctx, log, cfg.DebugAddr)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("paygate serving", zap.String("addr", ln.Addr().String()), zap.String("processor", cfg.Processor),
		zap.String("processor_account", account), zap.String("sim_addr", simAddr))
	if hooks != nil && hooks.listening != nil {
		hooks.listening(ln.Addr().String(), simAddr)
	}

	select {
	case err := <-served:
		return fmt.Errorf("paygate: http server: %w", err)
	case err := <-simDone:
		if err != nil {
			return fmt.Errorf("paygate: simulator: %w", err)
		}
		<-ctx.Done()
	case <-ctx.Done():
	}
	// Graceful shutdown: stop accepting, let requests in flight store their outcomes.
	log.Info("paygate shutting down", zap.Duration("timeout", cfg.ShutdownTimeout))
	shutdownCtx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownTimeout)
	defer cancel()
	err = srv.Shutdown(shutdownCtx)
	<-workersDone
	if qerr := queue.Stop(shutdownCtx); qerr != nil {
		log.Warn("job queue stop", zap.Error(qerr))
	}
	stopSim()
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("paygate: shutdown: %w", err)
	}
	log.Info("paygate stopped")
	return nil
}
