package charge

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/paygate/paygate/retry"
)

// series returns the series of each metric family of reg, as name → label sets (merchant and
// reason joined by "/") → value.
func series(t *testing.T, reg *prometheus.Registry) map[string]map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: got error %v, want nil", err)
	}
	out := map[string]map[string]float64{}
	for _, mf := range mfs {
		out[mf.GetName()] = map[string]float64{}
		for _, m := range mf.GetMetric() {
			key := ""
			for i, l := range m.GetLabel() {
				if i > 0 {
					key += "/"
				}
				key += l.GetValue()
			}
			out[mf.GetName()][key] = m.GetCounter().GetValue()
		}
	}
	return out
}

// TestMetricsExistAtStart: the counters that dashboards and alerts read are exposed at 0
// before the first operation, and a merchant's own series from its first operation on.
func TestMetricsExistAtStart(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	check := func(when string, want map[string]map[string]float64) {
		t.Helper()
		got := series(t, reg)
		for name, w := range want {
			if len(got[name]) != len(w) {
				t.Errorf("%s %s: got series %v, want %v", when, name, got[name], w)
				continue
			}
			for k, v := range w {
				if g, ok := got[name][k]; !ok || g != v {
					t.Errorf("%s %s{%s}: got %v (present %v), want %v", when, name, k, g, ok, v)
				}
			}
		}
	}
	check("at start", map[string]map[string]float64{
		"paygate_retries_prevented_total": {"/retry_budget_exhausted": 0, "/circuit_open": 0, "/deadline_exceeded": 0,
			"/retry_after_too_long": 0},
		"paygate_outcome_unknown_total": {"": 0},
	})
	m.Observe("m_1", retry.Report{Stop: retry.StopDeadline, Result: retry.Result{Status: retry.StatusPending},
		Attempts: []retry.AttemptRecord{{N: 1, Class: retry.ClassOutcomeUnknown}}})
	check("after m_1's first operation", map[string]map[string]float64{
		"paygate_retries_prevented_total": {"/retry_budget_exhausted": 0, "/circuit_open": 0, "/deadline_exceeded": 0,
			"/retry_after_too_long": 0, "m_1/retry_budget_exhausted": 0, "m_1/circuit_open": 0, "m_1/deadline_exceeded": 1,
			"m_1/retry_after_too_long": 0},
		"paygate_outcome_unknown_total": {"": 0, "m_1": 1},
	})
}
