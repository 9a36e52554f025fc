package main

import (
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/reconcile"
)

// config is paygate's configuration, read from the environment.
type config struct {
	DatabaseURL string
	Addr        string
	Processor   string // "sim" or "stripe"
	SimAddr     string
	// SimAccountFile keeps the built-in simulator's account id across runs (empty: a new
	// account at each start).
	SimAccountFile  string
	StripeKey       string
	StripeAPIBase   string
	MaxAmount       int64
	LogLevel        string
	ShutdownTimeout time.Duration
	DBMaxConns      int32
	// CompleterIdle is how long a charge stays processing, its key's lock expired, before
	// the completer resumes it; CompleterInterval how often the completer looks.
	CompleterIdle     time.Duration
	CompleterInterval time.Duration
	// KeyLockMargin is added to a request's deadline to lock its idempotency key.
	KeyLockMargin time.Duration
	// AccountRefresh is how often serve reads the processor's account again (it also reads
	// it after a failed connection, and before any request under an existing charge's key).
	AccountRefresh time.Duration
	// InFlightMargin is how long after its timeout an attempt may still execute at the
	// processor: an operator cannot resolve the charge before that.
	InFlightMargin time.Duration
	// ReadRate and SearchRate bound the processor reads of reconciliation, per process.
	ReadRate   float64
	SearchRate float64
	// ReconcileSchedule is when a pending charge is checked, after its first send;
	// ReconcileSweep how often due checks are enqueued.
	ReconcileSchedule reconcile.Schedule
	ReconcileSweep    time.Duration
	// ReconcileReplay lets reconciliation replay a key the processor may have seen.
	ReconcileReplay bool
	// VisaReattempts30d is the Visa cap on reattempts of one card in any 30 days.
	VisaReattempts30d int
	// MetricsAddr serves the Prometheus metrics and Go's profiler (net/http/pprof), apart
	// from the API.
	MetricsAddr string
	// BudgetScope is "fleet" (the retry budget and breakers shared by every replica through
	// the database) or "process" (each replica its own); see guards.go.
	BudgetScope string
	// ReadDatabaseURL, when set, is where reports and review lists are read (a standby).
	ReadDatabaseURL string
}

// configError names the variable that is wrong; main prints it as one line.
type configError struct {
	Var string
	Msg string
	// Exit is the exit status it ends the command with: 1 when zero.
	Exit int
}

func (e *configError) Error() string { return fmt.Sprintf("paygate: %s: %s", e.Var, e.Msg) }

// loadConfig reads the configuration through getenv. needDB says whether DATABASE_URL is
// required by the command.
func loadConfig(getenv func(string) string, needDB bool) (config, error) {
	c := config{
		DatabaseURL:       getenv("DATABASE_URL"),
		Addr:              orDefault(getenv("PAYGATE_ADDR"), "127.0.0.1:8080"),
		Processor:         getenv("PAYGATE_PROCESSOR"), // required by serve alone (see requireProcessor)
		SimAddr:           orDefault(getenv("PAYGATE_SIM_ADDR"), "127.0.0.1:12111"),
		SimAccountFile:    getenv("PAYGATE_SIM_ACCOUNT_FILE"),
		StripeKey:         getenv("STRIPE_SECRET_KEY"),
		StripeAPIBase:     getenv("STRIPE_API_BASE"),
		LogLevel:          orDefault(getenv("PAYGATE_LOG_LEVEL"), "info"),
		MetricsAddr:       orDefault(getenv("PAYGATE_METRICS_ADDR"), "127.0.0.1:9090"),
		BudgetScope:       orDefault(getenv("PAYGATE_BUDGET_SCOPE"), scopeFleet),
		ReadDatabaseURL:   getenv("PAYGATE_READ_DATABASE_URL"),
		MaxAmount:         99_999_999,
		ShutdownTimeout:   15 * time.Second,
		DBMaxConns:        32,
		CompleterIdle:     time.Minute,
		CompleterInterval: 10 * time.Second,
		KeyLockMargin:     15 * time.Second,
		AccountRefresh:    30 * time.Second,
		InFlightMargin:    reconcile.DefaultInFlightMargin,
		ReconcileSweep:    5 * time.Second,
	}
	if needDB {
		if c.DatabaseURL == "" {
			return c, &configError{Var: "DATABASE_URL", Msg: "is required (postgres://user@host:port/db)"}
		}
		if u, err := url.Parse(c.DatabaseURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			return c, &configError{Var: "DATABASE_URL", Msg: "must be a postgres:// URL"}
		}
	}
	if err := checkFleet(c); err != nil {
		return c, err
	}
	if err := checkAddr("PAYGATE_ADDR", c.Addr); err != nil {
		return c, err
	}
	if err := checkAddr("PAYGATE_METRICS_ADDR", c.MetricsAddr); err != nil {
		return c, err
	}
	switch c.Processor {
	case "":
		// Only serve talks to a processor, and it requires one to be named.
	case "sim":
		if err := checkAddr("PAYGATE_SIM_ADDR", c.SimAddr); err != nil {
			return c, err
		}
	case "stripe":
		if c.StripeKey == "" {
			return c, &configError{Var: "STRIPE_SECRET_KEY", Msg: `is required when PAYGATE_PROCESSOR=stripe`}
		}
		if c.StripeAPIBase != "" {
			if u, err := url.Parse(c.StripeAPIBase); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return c, &configError{Var: "STRIPE_API_BASE", Msg: "must be an http:// or https:// URL"}
			}
		}
	default:
		return c, &configError{Var: "PAYGATE_PROCESSOR", Msg: `must be "sim" or "stripe"`}
	}
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
	default:
		return c, &configError{Var: "PAYGATE_LOG_LEVEL", Msg: "must be debug, info, warn or error"}
	}
	if v := getenv("PAYGATE_MAX_AMOUNT"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			return c, &configError{Var: "PAYGATE_MAX_AMOUNT", Msg: "must be a positive integer (minor units)"}
		}
		c.MaxAmount = n
	}
	if v := getenv("PAYGATE_SHUTDOWN_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return c, &configError{Var: "PAYGATE_SHUTDOWN_TIMEOUT", Msg: "must be a positive duration such as 15s"}
		}
		c.ShutdownTimeout = d
	}
	for _, d := range []struct {
		name string
		dst  *time.Duration
	}{
		{"PAYGATE_COMPLETER_IDLE", &c.CompleterIdle},
		{"PAYGATE_COMPLETER_INTERVAL", &c.CompleterInterval},
		{"PAYGATE_KEY_LOCK_MARGIN", &c.KeyLockMargin},
		{"PAYGATE_RECONCILE_SWEEP", &c.ReconcileSweep},
		{"PAYGATE_ACCOUNT_REFRESH", &c.AccountRefresh},
		{"PAYGATE_IN_FLIGHT_MARGIN", &c.InFlightMargin},
	} {
		if v := getenv(d.name); v != "" {
			dur, err := time.ParseDuration(v)
			if err != nil || dur <= 0 {
				return c, &configError{Var: d.name, Msg: "must be a positive duration such as 30s"}
			}
			*d.dst = dur
		}
	}
	c.ReadRate, c.SearchRate = 50, 10
	for _, r := range []struct {
		name string
		dst  *float64
	}{{"PAYGATE_RECONCILE_READ_RATE", &c.ReadRate}, {"PAYGATE_RECONCILE_SEARCH_RATE", &c.SearchRate}} {
		if v := getenv(r.name); v != "" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f <= 0 || f > 10000 {
				return c, &configError{Var: r.name, Msg: "must be a positive number of requests per second"}
			}
			*r.dst = f
		}
	}
	c.ReconcileSchedule = reconcile.DefaultSchedule
	if v := getenv("PAYGATE_RECONCILE_SCHEDULE"); v != "" {
		sch, err := reconcile.ParseSchedule(v)
		if err != nil || len(sch) == 0 {
			return c, &configError{Var: "PAYGATE_RECONCILE_SCHEDULE", Msg: "must be a schedule such as 30s,5m,1h,1d*7"}
		}
		c.ReconcileSchedule = sch
	}
	switch v := getenv("PAYGATE_RECONCILE_REPLAY"); v {
	case "", "off":
	case "on":
		c.ReconcileReplay = true
	default:
		return c, &configError{Var: "PAYGATE_RECONCILE_REPLAY", Msg: `must be "on" or "off"`}
	}
	c.VisaReattempts30d = decline.DefaultVisaReattempts30d
	if v := getenv("PAYGATE_VISA_REATTEMPTS_30D"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 100 {
			return c, &configError{Var: "PAYGATE_VISA_REATTEMPTS_30D", Msg: "must be an integer from 1 to 100 (Visa's rule is 15; some acquirers state 20)"}
		}
		c.VisaReattempts30d = n
	}
	if v := getenv("PAYGATE_DB_MAX_CONNS"); v != "" {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 2 {
			return c, &configError{Var: "PAYGATE_DB_MAX_CONNS", Msg: "must be an integer of at least 2"}
		}
		c.DBMaxConns = int32(n)
	}
	return c, nil
}

// checkServe refuses what serve cannot run with. A configuration that names no processor:
// serve never falls back to the simulator on its own, or a deployment that forgot the
// variable would approve every charge against a fake (exit status 2); PAYGATE_DEBUG_ADDR,
// which serve no longer reads: the profiler is served with the metrics, on
// PAYGATE_METRICS_ADDR, and a setting silently ignored would leave it where it was not
// expected.
func checkServe(c config, getenv func(string) string) error {
	if c.Processor == "" {
		return &configError{Var: "PAYGATE_PROCESSOR", Msg: `is required: "sim" (the built-in simulator) or "stripe" (STRIPE_SECRET_KEY, STRIPE_API_BASE)`,
			Exit: exitUsage}
	}
	if getenv("PAYGATE_DEBUG_ADDR") != "" {
		return &configError{Var: "PAYGATE_DEBUG_ADDR", Msg: "is no longer read: the profiler is served with the metrics, on PAYGATE_METRICS_ADDR"}
	}
	return nil
}

func checkAddr(name, addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || strings.Contains(host, "/") {
		return &configError{Var: name, Msg: "must be HOST:PORT"}
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return &configError{Var: name, Msg: "must have a port between 0 and 65535"}
	}
	return nil
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}
