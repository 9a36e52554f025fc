package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/stripe/stripe-go/v76"
	"go.uber.org/zap"
	"golang.org/x/time/rate"

	"github.com/paygate/paygate/api"
	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/internal/sim"
	"github.com/paygate/paygate/jobs"
	"github.com/paygate/paygate/migrations"
	"github.com/paygate/paygate/processor"
	"github.com/paygate/paygate/reconcile"
	"github.com/paygate/paygate/retry"
	"github.com/paygate/paygate/store"
)

// keyCacheTTL is how long an authenticated key is remembered: a revoked key stops working
// within it on every replica.
const keyCacheTTL = 10 * time.Second

// simSecretKey is the key the gateway presents to its built-in simulator.
const simSecretKey = "sk_test_paygate_simulator"

// serveHooks lets whole-program tests learn the addresses a server bound.
type serveHooks struct {
	listening func(apiAddr, simAddr, metricsAddr string)
}

// serveUsage is the command line of serve.
const serveUsage = "usage: paygate serve, configured through the environment: see README"

// runServe runs the gateway until ctx ends. It binds every listener it needs (PAYGATE_ADDR,
// PAYGATE_SIM_ADDR with the built-in simulator, PAYGATE_METRICS_ADDR) before it
// starts any work, so that an address it cannot use is the only line it prints. A
// configuration it cannot use is a *configError naming the variable; unexpected arguments a
// *usageError.
func runServe(ctx context.Context, args []string, stderr io.Writer, getenv func(string) string, hooks *serveHooks) error {
	if len(args) != 0 {
		return &usageError{fmt.Sprintf("serve takes no arguments, got %q (%s)", args[0], serveUsage)}
	}
	cfg, err := loadConfig(getenv, true)
	if err != nil {
		return err
	}
	if err := checkServe(cfg, getenv); err != nil {
		return err
	}
	lns, err := listen(cfg)
	if err != nil {
		return err
	}
	// Each listener is closed when its server stops; closing it again here is harmless and
	// frees it on every early return.
	defer lns.close()
	log := newLogger(cfg.LogLevel, stderr)
	defer log.Sync() //nolint:errcheck

	st, err := migrations.Versions(ctx, cfg.DatabaseURL)
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
	reads, closeReads, err := openReads(ctx, cfg, db, log.Named("store"))
	if err != nil {
		return err
	}
	defer closeReads()

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
		simAddr = lns.sim.Addr().String()
		var simAccount string
		if cfg.SimAccountFile != "" {
			if simAccount, err = sim.AccountFromFile(cfg.SimAccountFile); err != nil {
				return &configError{Var: "PAYGATE_SIM_ACCOUNT_FILE", Msg: err.Error()}
			}
		}
		s := sim.New(sim.Config{AccountID: simAccount, SecretKey: simSecretKey, Logger: log.Named("sim")})
		go func() { simDone <- s.Serve(simCtx, lns.sim) }()
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
		return processorError(cfg, err)
	}
	// The processor behind the API base may change account while serve runs (an external
	// simulator restarted without --account): the watch reads it again periodically and
	// after every connection that failed, new charges are recorded at its account, and
	// nothing is sent, replayed or reconciled under an existing charge's key before the
	// processor confirmed the charge's account.
	accounts := processor.NewAccountWatch(proc, account, processor.WatchConfig{Every: cfg.AccountRefresh, Log: log.Named("processor"),
		OnChange: proc.ForgetCards})
	proc.OnConnectionFailure(accounts.MarkStale)
	go accounts.Run(ctx)

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	guards, err := newGuards(cfg, db, log.Named("fleet"), reg)
	if err != nil {
		return err
	}
	go guards.run(ctx)
	runner := charge.NewRunner(charge.RunnerConfig{
		Processor: proc,
		Accounts:  accounts,
		Policy:    retry.DefaultPolicy(),
		Guards:    guards,
		Observer:  charge.NewMetrics(reg),
		Log:       log.Named("charge"),
	})
	charges := charge.NewService(charge.ServiceConfig{Store: db, Runner: runner, Render: api.RenderCharge,
		Cards: proc, Caps: decline.Caps{VisaReattempts30d: cfg.VisaReattempts30d},
		Log: log.Named("charge"), LockMargin: cfg.KeyLockMargin})
	workersDone := startWorkers(ctx, cfg, charges)

	// Durable background work on River: reconciliation of unknown outcomes and the reaper
	// of expired idempotency keys.
	registry := jobs.NewRegistry()
	if err := jobs.AddKeyReaper(registry, log.Named("jobs"), time.Hour, func(ctx context.Context) (int, error) {
		n, err := db.ReapKeys(ctx, keyRetention)
		return int(n), err
	}); err != nil {
		return err
	}
	processorReads, err := newCountedReads(proc, reg)
	if err != nil {
		return err
	}
	var replay reconcile.Writer
	if cfg.ReconcileReplay {
		replay = proc
	}
	jan, err := reconcile.NewJanitor(reconcile.JanitorConfig{
		Store:          db,
		Replay:         replay,
		InFlightMargin: cfg.InFlightMargin,
		Reconciler: reconcile.Config{
			Accounts:      accounts,
			Reads:         processorReads,
			ReadLimiter:   rate.NewLimiter(rate.Limit(cfg.ReadRate), max(1, int(cfg.ReadRate/10))),
			SearchLimiter: rate.NewLimiter(rate.Limit(cfg.SearchRate), max(1, int(cfg.SearchRate/10))),
			Policy:        reconcile.Policy{Schedule: cfg.ReconcileSchedule},
			// The 24 h rule is judged on the database's clock, whichever replica's runs.
			Now:  db.Clock(10 * time.Second),
			Caps: decline.Caps{VisaReattempts30d: cfg.VisaReattempts30d},
		},
		SweepEvery: cfg.ReconcileSweep,
		Log:        log.Named("janitor"),
	}, registry)
	if err != nil {
		return err
	}
	auto, err := charge.NewAutoChains(charge.AutoChainsConfig{Service: charges, Store: db, SweepEvery: cfg.ReconcileSweep,
		Log: log.Named("reattempts")}, registry)
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
		Log:         log.Named("http"),
		Auth:        api.NewCachedAuth(db, keyCacheTTL, 10000),
		Ready:       readiness{db},
		Jobs:        queue,
		Review:      reads,
		Recon:       jan,
		Reports:     newReports(reads, cfg),
		Charges:     charges,
		Limits:      charge.Limits{MaxAmount: cfg.MaxAmount},
		Unavailable: store.Unavailable,
		Registry:    reg,
	})
	ln := lns.api
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      90 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          zap.NewStdLog(log.Named("http")),
	}
	startMetricsServer(ctx, log, lns.metrics, reg)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	log.Info("paygate serving", zap.String("addr", ln.Addr().String()), zap.String("processor", cfg.Processor),
		zap.String("processor_account", account), zap.String("sim_addr", simAddr))
	if hooks != nil && hooks.listening != nil {
		hooks.listening(ln.Addr().String(), simAddr, lns.metrics.Addr().String())
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
	guards.close(shutdownCtx, log)
	stopSim()
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("paygate: shutdown: %w", err)
	}
	log.Info("paygate stopped")
	return nil
}

// listeners are the addresses serve binds before it starts any work.
type listeners struct {
	api     net.Listener // PAYGATE_ADDR
	sim     net.Listener // PAYGATE_SIM_ADDR, with the built-in simulator; nil otherwise
	metrics net.Listener // PAYGATE_METRICS_ADDR
}

// listen binds the listeners of cfg. It returns a *configError naming the variable of an
// address that cannot be bound (in use, or not an address of this machine), having closed
// the ones it bound.
func listen(cfg config) (*listeners, error) {
	l := &listeners{}
	for _, b := range []struct {
		name, addr string
		dst        *net.Listener
		want       bool
	}{
		{"PAYGATE_ADDR", cfg.Addr, &l.api, true},
		{"PAYGATE_SIM_ADDR", cfg.SimAddr, &l.sim, cfg.Processor == "sim"},
		{"PAYGATE_METRICS_ADDR", cfg.MetricsAddr, &l.metrics, true},
	} {
		if !b.want {
			continue
		}
		ln, err := net.Listen("tcp", b.addr)
		if err != nil {
			l.close()
			return nil, &configError{Var: b.name, Msg: fmt.Sprintf("cannot listen on %s: %v", b.addr, listenReason(err))}
		}
		*b.dst = ln
	}
	return l, nil
}

// listenReason is the system's reason a bind failed, without the "listen tcp ADDR:" the
// message around it already says.
func listenReason(err error) error {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err
	}
	return err
}

func (l *listeners) close() {
	for _, ln := range []net.Listener{l.api, l.sim, l.metrics} {
		if ln != nil {
			_ = ln.Close()
		}
	}
}

// processorError names the variable most likely at fault when the processor cannot be used
// at start-up: STRIPE_SECRET_KEY when it refused the key (401, or 403 for a key without
// access), STRIPE_API_BASE when it cannot be reached or does not answer as Stripe does
// (PAYGATE_SIM_ADDR for the built-in simulator). The key never appears in the message.
func processorError(cfg config, err error) error {
	if cfg.Processor == "sim" {
		return &configError{Var: "PAYGATE_SIM_ADDR", Msg: fmt.Sprintf("the built-in processor simulator does not answer: %v", err)}
	}
	base := redactURL(cfg.StripeAPIBase)
	if base == "" {
		base = stripe.APIURL + " (the default)"
	}
	var (
		se  *stripe.Error
		ue  *url.Error
		msg string
	)
	switch {
	case errors.As(err, &se) && (se.HTTPStatusCode == http.StatusUnauthorized || se.HTTPStatusCode == http.StatusForbidden):
		return &configError{Var: "STRIPE_SECRET_KEY", Msg: fmt.Sprintf("the processor at %s refused the key (HTTP %d): %s",
			base, se.HTTPStatusCode, hideKey(se.Msg, cfg.StripeKey))}
	case errors.As(err, &se):
		msg = fmt.Sprintf("the processor at %s answered HTTP %d: %s", base, se.HTTPStatusCode, se.Msg)
	case errors.As(err, &ue):
		msg = fmt.Sprintf("cannot reach the processor at %s: %v", base, ue.Err)
	default:
		msg = fmt.Sprintf("the processor at %s does not answer as a Stripe API does: %v", base, err)
	}
	return &configError{Var: "STRIPE_API_BASE", Msg: hideKey(msg, cfg.StripeKey)}
}

// redactURL returns raw with the password of its user information replaced, so that an
// error naming the processor's address never prints a secret.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	return u.Redacted()
}

// hideKey removes the secret key from a message, should a processor echo it.
func hideKey(msg, key string) string {
	if key == "" {
		return msg
	}
	return strings.ReplaceAll(msg, key, "[redacted]")
}
