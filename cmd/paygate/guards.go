package main

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/retry"
	"github.com/paygate/paygate/store"
)

// The values of PAYGATE_BUDGET_SCOPE.
//
// serve defaults to fleet: it cannot know how many replicas will share its database, and
// there are more than one whenever two run at once, a rolling deploy's old and new
// processes included. With one replica, fleet decides as process does (its circuits on
// its own answers, its retries on tokens of the same buckets), at the cost of a small
// transaction every DefaultFleetSync; process keeps each replica's budget and breakers in
// its memory alone, so N replicas may retry up to N times the budget.
const (
	scopeFleet   = "fleet"
	scopeProcess = "process"
)

// checkFleet checks PAYGATE_BUDGET_SCOPE and PAYGATE_READ_DATABASE_URL.
func checkFleet(c config) error {
	switch c.BudgetScope {
	case scopeFleet, scopeProcess:
	default:
		return &configError{Var: "PAYGATE_BUDGET_SCOPE", Msg: `must be "fleet" (one budget and breaker for every replica) or "process"`}
	}
	if c.ReadDatabaseURL != "" {
		if u, err := url.Parse(c.ReadDatabaseURL); err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
			return &configError{Var: "PAYGATE_READ_DATABASE_URL", Msg: "must be a postgres:// URL"}
		}
	}
	return nil
}

// guards are serve's retry budget and circuit breakers, per process or shared by the fleet.
type guards struct {
	charge.Guards
	fleet  *retry.Fleet                                      // nil with PAYGATE_BUDGET_SCOPE=process
	states func(now time.Time) map[string]retry.BreakerState // every account's circuit, for the metrics
}

var _ charge.Guards = (*retry.Fleet)(nil)

// newGuards returns the guards of cfg's scope, their metrics registered on reg. The fleet's
// shared state is db; nothing is read or written before run.
func newGuards(cfg config, db *store.DB, log *zap.Logger, reg prometheus.Registerer) (*guards, error) {
	g := &guards{}
	switch cfg.BudgetScope {
	case scopeProcess:
		budgets, err := retry.NewBudgets(retry.DefaultScopeBudget(), retry.DefaultGlobalBudget())
		if err != nil {
			return nil, err
		}
		circuits, err := retry.NewCircuits(retry.DefaultBreakerConfig())
		if err != nil {
			return nil, err
		}
		g.Guards, g.states = charge.ProcessGuards{Budgets: budgets, Circuits: circuits}, circuits.States
	default:
		host, _ := os.Hostname()
		f, err := retry.NewFleet(db, retry.FleetConfig{
			Scope:   retry.DefaultScopeBudget(),
			Global:  retry.DefaultGlobalBudget(),
			Breaker: retry.DefaultBreakerConfig(),
			Replica: fmt.Sprintf("%s/%d", host, os.Getpid()),
			Log:     log,
		})
		if err != nil {
			return nil, err
		}
		g.Guards, g.fleet, g.states = f, f, f.States
	}
	if err := reg.Register(&guardsCollector{g: g, scope: cfg.BudgetScope}); err != nil {
		return nil, err
	}
	return g, nil
}

// run syncs the fleet's state until ctx ends (nothing to do per process).
func (g *guards) run(ctx context.Context) {
	if g.fleet != nil {
		g.fleet.Run(ctx)
	}
}

// close gives the fleet back the tokens this replica holds, once nothing retries any more.
// It waits a few seconds at most: a database that does not answer costs the tokens, as a
// crash would, not the shutdown.
func (g *guards) close(ctx context.Context, log *zap.Logger) {
	if g.fleet == nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := g.fleet.Close(ctx, time.Now()); err != nil {
		log.Warn("the retry tokens this replica held are lost: the fleet's state could not be reached", zap.Error(err))
	}
}

var (
	descScope = prometheus.NewDesc("paygate_budget_scope",
		"1 for the scope of the retry budget and breakers: fleet (shared by every replica) or process.", []string{"scope"}, nil)
	descCircuitOpen = prometheus.NewDesc("paygate_circuit_open",
		"1 while this replica's circuit breaker of a processor account refuses attempts (open), else 0.", []string{"account"}, nil)
	descFleetSyncs = prometheus.NewDesc("paygate_fleet_syncs_total",
		"Syncs of this replica with the fleet's shared retry budget and breakers, by result.", []string{"result"}, nil)
	descFleetLeased = prometheus.NewDesc("paygate_fleet_leased_tokens",
		"Retry tokens this replica holds, leased from the fleet's shared buckets: of every scope, or of the global bucket.", []string{"bucket"}, nil)
)

// guardsCollector exposes the guards' state at scrape time.
type guardsCollector struct {
	g     *guards
	scope string
}

func (c *guardsCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descScope
	ch <- descCircuitOpen
	ch <- descFleetSyncs
	ch <- descFleetLeased
}

func (c *guardsCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(descScope, prometheus.GaugeValue, 1, c.scope)
	for account, s := range c.g.states(time.Now()) {
		v := 0.0
		if s == retry.BreakerOpen {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(descCircuitOpen, prometheus.GaugeValue, v, account)
	}
	if c.g.fleet == nil {
		return
	}
	st := c.g.fleet.Stats()
	ch <- prometheus.MustNewConstMetric(descFleetSyncs, prometheus.CounterValue, float64(st.Syncs-st.Failures), "ok")
	ch <- prometheus.MustNewConstMetric(descFleetSyncs, prometheus.CounterValue, float64(st.Failures), "failed")
	ch <- prometheus.MustNewConstMetric(descFleetLeased, prometheus.GaugeValue, st.Leased, "scopes")
	ch <- prometheus.MustNewConstMetric(descFleetLeased, prometheus.GaugeValue, st.GlobalLeased, "global")
}
