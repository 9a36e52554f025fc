package charge

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/paygate/paygate/retry"
)

// Metrics counts logical operations and processor attempts apart, so that retry
// amplification (attempts ÷ operations) is visible, and why runs stopped.
type Metrics struct {
	operations    *prometheus.CounterVec
	attempts      *prometheus.CounterVec
	prevented     *prometheus.CounterVec
	unknown       *prometheus.CounterVec
	amplification prometheus.GaugeFunc

	mu            sync.Mutex
	totalOps      float64
	totalAttempts float64
	merchants     map[string]bool // those whose series exist
}

// preventedReasons are the stop reasons retries_prevented_total counts: a retry the loop
// would have sent, refused by the budget, the breaker, the deadline or a Retry-After beyond
// the cap.
var preventedReasons = []retry.StopReason{retry.StopBudget, retry.StopCircuitOpen, retry.StopDeadline,
	retry.StopRetryAfterTooLong}

var _ Observer = (*Metrics)(nil)

// NewMetrics registers the charge metrics on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		operations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "paygate", Name: "operations_total",
			Help: "Logical charge operations run through the retry loop, by merchant, outcome and stop reason.",
		}, []string{"merchant", "outcome", "stop"}),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "paygate", Name: "attempts_total",
			Help: "Processor attempts, by merchant and class (originals and retries alike).",
		}, []string{"merchant", "class"}),
		prevented: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "paygate", Name: "retries_prevented_total",
			Help: "Retries the loop did not send, by merchant and reason (budget, breaker, deadline, retry_after_too_long).",
		}, []string{"merchant", "reason"}),
		unknown: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "paygate", Name: "outcome_unknown_total",
			Help: "Operations that ended pending (the outcome may exist at the processor), by merchant.",
		}, []string{"merchant"}),
		merchants: map[string]bool{},
	}
	// The series dashboards and alerts read exist from the start, at 0: the totals now
	// (merchant "", which Prometheus stores without the label), each merchant's own when
	// its first operation is observed.
	m.addMerchant("")
	m.amplification = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "paygate", Name: "retry_amplification",
		Help: "Processor attempts per logical operation since the process started.",
	}, func() float64 {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.totalOps == 0 {
			return 0
		}
		return m.totalAttempts / m.totalOps
	})
	reg.MustRegister(m.operations, m.attempts, m.prevented, m.unknown, m.amplification)
	return m
}

// addMerchant creates merchantID's series of retries_prevented_total and
// outcome_unknown_total at 0, once.
func (m *Metrics) addMerchant(merchantID string) {
	m.mu.Lock()
	seen := m.merchants[merchantID]
	m.merchants[merchantID] = true
	m.mu.Unlock()
	if seen {
		return
	}
	for _, r := range preventedReasons {
		m.prevented.WithLabelValues(merchantID, string(r))
	}
	m.unknown.WithLabelValues(merchantID)
}

// Observe implements Observer.
func (m *Metrics) Observe(merchantID string, rep retry.Report) {
	m.addMerchant(merchantID)
	m.operations.WithLabelValues(merchantID, rep.Result.String(), string(rep.Stop)).Inc()
	for _, a := range rep.Attempts {
		m.attempts.WithLabelValues(merchantID, string(a.Class)).Inc()
	}
	if slices.Contains(preventedReasons, rep.Stop) && len(rep.Attempts) > 0 {
		m.prevented.WithLabelValues(merchantID, string(rep.Stop)).Inc()
	}
	if rep.Result.Status == retry.StatusPending {
		m.unknown.WithLabelValues(merchantID).Inc()
	}
	m.mu.Lock()
	m.totalOps++
	m.totalAttempts += float64(len(rep.Attempts))
	m.mu.Unlock()
}

// ProcessGuards are the process-wide retry budgets (per processor account and merchant, under a
// global bucket) and breakers (per processor account).
type ProcessGuards struct {
	Budgets  *retry.Budgets
	Circuits *retry.Circuits
}

var _ Guards = ProcessGuards{}

// Budget implements Guards.
func (g ProcessGuards) Budget(account, merchant string) retry.Budget {
	return g.Budgets.For(account, merchant)
}

// Breaker implements Guards.
func (g ProcessGuards) Breaker(account string) retry.Breaker { return g.Circuits.For(account) }
