package main

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/event"
	"github.com/paygate/paygate/jobs"
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
	// AccountFresh is how recent a read of the processor's account must be to confirm a
	// charge's account without reading it again.
	AccountFresh time.Duration
	// InFlightMargin is how long after its timeout an attempt may still execute at the
	// processor: an operator cannot resolve the charge before that.
	InFlightMargin time.Duration
	// ReadRate and SearchRate bound the processor reads of reconciliation, per process.
	ReadRate   float64
	SearchRate float64
	// ReconcileSchedule is when a pending charge is checked, after its first send;
	// ReconcileSweep how often due checks are enqueued; ReconcileSweepGather how long the due
	// charges of an account whose PaymentIntent id is unknown wait for others before their
	// sweep (zero: not at all).
	ReconcileSchedule    reconcile.Schedule
	ReconcileSweep       time.Duration
	ReconcileSweepGather time.Duration
	// ReconcileReplay lets reconciliation replay a key the processor may have seen.
	ReconcileReplay bool
	// JobTimeout bounds one attempt of a background job (zero: jobs.DefaultJobTimeout; a
	// reconciliation check's own bound is reconcile.CheckRunsAtMost at most), and
	// JobRescueAfter is how long a job may run before a replica takes it for stuck, its
	// replica dead (zero: the job timeout plus jobs.DefaultRescueMargin).
	JobTimeout     time.Duration
	JobRescueAfter time.Duration
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
	// WebhookSecret verifies the processor's events on /webhooks/stripe; SimWebhooks sends
	// the built-in simulator's events there (see webhooks.go).
	WebhookSecret string
	SimWebhooks   bool
	// WebhookAllowHTTP allows merchants' webhook endpoints at http:// loopback addresses
	// (development). EventSchedule is how deliveries of events are retried; EventDispatch
	// how often new events are looked for.
	WebhookAllowHTTP bool
	EventSchedule    event.Schedule
	EventDispatch    time.Duration
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
// required by the command. It returns a *configError naming the first variable that is wrong.
func loadConfig(getenv func(string) string, needDB bool) (config, error) {
	c := defaults(getenv)
	checks := []func(config) error{checkDatabase(needDB), checkFleet, checkAddrs, checkProcessor, checkLogLevel}
	for _, check := range checks {
		if err := check(c); err != nil {
			return c, err
		}
	}
	for _, v := range c.variables() {
		if s := getenv(v.name); s != "" {
			if msg := v.parse(s); msg != "" {
				return c, &configError{Var: v.name, Msg: msg}
			}
		}
	}
	if err := loadWebhookConfig(&c, getenv); err != nil {
		return c, err
	}
	if c.JobRescueAfter != 0 && c.JobRescueAfter <= c.jobTimeout() {
		return c, &configError{Var: "PAYGATE_JOB_RESCUE_AFTER", Msg: "must be longer than the job timeout (PAYGATE_JOB_TIMEOUT, default 1m)"}
	}
	return c, nil
}

// defaults is the configuration with every default, and the variables read as strings.
func defaults(getenv func(string) string) config {
	return config{
		DatabaseURL:       getenv("DATABASE_URL"),
		Addr:              orDefault(getenv("PAYGATE_ADDR"), "127.0.0.1:8080"),
		Processor:         getenv("PAYGATE_PROCESSOR"), // required by serve alone (see checkServe)
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
		CompleterInterval: time.Second,
		KeyLockMargin:     15 * time.Second,
		AccountRefresh:    30 * time.Second,
		AccountFresh:      2 * time.Second,
		InFlightMargin:    reconcile.DefaultInFlightMargin,
		ReadRate:          50,
		SearchRate:        10,
		ReconcileSchedule: reconcile.DefaultSchedule,
		ReconcileSweep:    5 * time.Second,
		VisaReattempts30d: decline.DefaultVisaReattempts30d,
		EventSchedule:     event.DefaultSchedule(),
		EventDispatch:     250 * time.Millisecond,
	}
}

// variable is one variable that parse reads into the configuration: it returns what is
// wrong with the value, or "".
type variable struct {
	name  string
	parse func(v string) string
}

// variables are the variables read into c beyond its strings, in the order they are checked.
func (c *config) variables() []variable {
	const positive = "must be a positive duration such as 30s"
	rate := "must be a positive number of requests per second"
	return []variable{
		{"PAYGATE_MAX_AMOUNT", intIn(&c.MaxAmount, 1, math.MaxInt64, "must be a positive integer (minor units)")},
		{"PAYGATE_SHUTDOWN_TIMEOUT", duration(&c.ShutdownTimeout, "must be a positive duration such as 15s")},
		{"PAYGATE_COMPLETER_IDLE", duration(&c.CompleterIdle, positive)},
		{"PAYGATE_COMPLETER_INTERVAL", duration(&c.CompleterInterval, positive)},
		{"PAYGATE_KEY_LOCK_MARGIN", duration(&c.KeyLockMargin, positive)},
		{"PAYGATE_RECONCILE_SWEEP", duration(&c.ReconcileSweep, positive)},
		{"PAYGATE_RECONCILE_SWEEP_GATHER", func(v string) string {
			d, err := time.ParseDuration(v)
			if err != nil || d < 0 || d > time.Hour {
				return "must be a duration from 0 to 1h such as 30s"
			}
			c.ReconcileSweepGather = d
			return ""
		}},
		{"PAYGATE_ACCOUNT_REFRESH", duration(&c.AccountRefresh, positive)},
		{"PAYGATE_ACCOUNT_FRESH", duration(&c.AccountFresh, positive)},
		{"PAYGATE_IN_FLIGHT_MARGIN", duration(&c.InFlightMargin, positive)},
		{"PAYGATE_JOB_TIMEOUT", duration(&c.JobTimeout, positive)},
		{"PAYGATE_JOB_RESCUE_AFTER", duration(&c.JobRescueAfter, positive)},
		{"PAYGATE_RECONCILE_READ_RATE", floatIn(&c.ReadRate, 10000, rate)},
		{"PAYGATE_RECONCILE_SEARCH_RATE", floatIn(&c.SearchRate, 10000, rate)},
		{"PAYGATE_RECONCILE_SCHEDULE", func(v string) string {
			sch, err := reconcile.ParseSchedule(v)
			if err != nil || len(sch) == 0 {
				return "must be a schedule such as 30s,5m,1h,1d*7"
			}
			c.ReconcileSchedule = sch
			return ""
		}},
		{"PAYGATE_RECONCILE_REPLAY", func(v string) string {
			if v != "on" && v != "off" {
				return `must be "on" or "off"`
			}
			c.ReconcileReplay = v == "on"
			return ""
		}},
		{"PAYGATE_VISA_REATTEMPTS_30D", intIn(&c.VisaReattempts30d, 1, 100,
			"must be an integer from 1 to 100 (Visa's rule is 15; some acquirers state 20)")},
		{"PAYGATE_WEBHOOK_ALLOW_HTTP", func(v string) string {
			if v != "0" && v != "1" {
				return `must be "1" (allow http:// endpoints at loopback addresses) or "0"`
			}
			c.WebhookAllowHTTP = v == "1"
			return ""
		}},
		{"PAYGATE_EVENT_RETRY_BASE", duration(&c.EventSchedule.Backoff.Base, positive)},
		{"PAYGATE_EVENT_RETRY_CAP", duration(&c.EventSchedule.Backoff.Cap, positive)},
		{"PAYGATE_EVENT_RETRY_WINDOW", duration(&c.EventSchedule.Window, positive)},
		{"PAYGATE_EVENT_DISABLE_AFTER", duration(&c.EventSchedule.DisableAfter, positive)},
		{"PAYGATE_EVENT_DISPATCH_EVERY", duration(&c.EventDispatch, positive)},
		{"PAYGATE_DB_MAX_CONNS", intIn(&c.DBMaxConns, 2, math.MaxInt32, "must be an integer of at least 2")},
	}
}

// jobTimeout is the bound of one job's attempt.
func (c config) jobTimeout() time.Duration {
	if c.JobTimeout > 0 {
		return c.JobTimeout
	}
	return jobs.DefaultJobTimeout
}

// duration parses a positive duration into dst.
func duration(dst *time.Duration, msg string) func(string) string {
	return func(v string) string {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return msg
		}
		*dst = d
		return ""
	}
}

// intIn parses an integer from lo to hi into dst.
func intIn[T int | int32 | int64](dst *T, lo, hi int64, msg string) func(string) string {
	return func(v string) string {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < lo || n > hi {
			return msg
		}
		*dst = T(n)
		return ""
	}
}

// floatIn parses a positive number up to hi into dst.
func floatIn(dst *float64, hi float64, msg string) func(string) string {
	return func(v string) string {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 || f > hi {
			return msg
		}
		*dst = f
		return ""
	}
}

// checkDatabase refuses a DATABASE_URL that is not a postgres:// URL, or none when needDB.
func checkDatabase(needDB bool) func(config) error {
	return func(c config) error {
		if !needDB {
			return nil
		}
		if c.DatabaseURL == "" {
			return &configError{Var: "DATABASE_URL", Msg: "is required (postgres://user@host:port/db)"}
		}
		if u, err := url.Parse(c.DatabaseURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			return &configError{Var: "DATABASE_URL", Msg: "must be a postgres:// URL"}
		}
		return nil
	}
}

// checkAddrs refuses API and metrics addresses that are not HOST:PORT.
func checkAddrs(c config) error {
	if err := checkAddr("PAYGATE_ADDR", c.Addr); err != nil {
		return err
	}
	return checkAddr("PAYGATE_METRICS_ADDR", c.MetricsAddr)
}

// checkProcessor refuses a processor paygate cannot talk to: another one than sim or stripe,
// a simulator address that is not HOST:PORT, Stripe without a key or with an API base that is
// not an http(s) URL.
func checkProcessor(c config) error {
	switch c.Processor {
	case "":
		// Only serve talks to a processor, and it requires one to be named.
	case "sim":
		return checkAddr("PAYGATE_SIM_ADDR", c.SimAddr)
	case "stripe":
		if c.StripeKey == "" {
			return &configError{Var: "STRIPE_SECRET_KEY", Msg: `is required when PAYGATE_PROCESSOR=stripe`}
		}
		if c.StripeAPIBase != "" {
			if u, err := url.Parse(c.StripeAPIBase); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return &configError{Var: "STRIPE_API_BASE", Msg: "must be an http:// or https:// URL"}
			}
		}
	default:
		return &configError{Var: "PAYGATE_PROCESSOR", Msg: `must be "sim" or "stripe"`}
	}
	return nil
}

// checkLogLevel refuses a log level zap does not have.
func checkLogLevel(c config) error {
	switch c.LogLevel {
	case "debug", "info", "warn", "error":
		return nil
	}
	return &configError{Var: "PAYGATE_LOG_LEVEL", Msg: "must be debug, info, warn or error"}
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
