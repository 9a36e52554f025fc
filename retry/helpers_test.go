package retry

import (
	"math/rand/v2"
	"testing"
	"time"
)

// t0 is the fake clock's origin in tests.
var t0 = time.Date(2026, time.March, 2, 12, 0, 0, 0, time.UTC)

// step is one scripted processor response.
type step struct {
	class      Class
	status     int
	code       string
	latency    time.Duration
	retryAfter string
	date       string
	maybe      bool
	// timeout: no answer within the attempt's timeout, after the request
	// was written (the attempt takes its whole timeout).
	timeout bool
}

// respond applies a step to an attempt, returning its outcome and duration.
func (s step) respond(a Attempt) (Outcome, time.Duration) {
	if s.timeout {
		return Outcome{Class: ClassOutcomeUnknown, MaybeExecuted: true}, a.Timeout
	}
	return Outcome{
		Class:         s.class,
		HTTPStatus:    s.status,
		ProcessorCode: s.code,
		RetryAfter:    s.retryAfter,
		Date:          s.date,
		MaybeExecuted: s.maybe,
	}, min(s.latency, a.Timeout)
}

// Common scripted responses.
var (
	ok200      = step{class: ClassSuccess, status: 200, latency: 40 * time.Millisecond}
	unavail503 = step{class: ClassRetry, status: 503, latency: 40 * time.Millisecond}
	refused    = step{class: ClassNotSent, latency: 5 * time.Millisecond}
	timedOut   = step{timeout: true}
	lost       = step{class: ClassOutcomeUnknown, maybe: true, latency: 200 * time.Millisecond}
	invalid422 = step{class: ClassTerminal, status: 422, code: "parameter_invalid", latency: 30 * time.Millisecond}
	decline402 = step{class: ClassDecline, status: 402, code: "card_declined", latency: 30 * time.Millisecond}
)

// scripted is a run driven through a script on a fake clock, exactly as
// the retry-policy simulator drives the core.
type scripted struct {
	report   Report
	attempts []Attempt // as handed to the caller
	sent     int       // requests performed
	now      time.Time // the fake clock when the run stopped
}

// runScript drives a Run from t0 through script and fails the test if the
// run asks for more attempts than the script holds.
func runScript(t *testing.T, p Policy, op Operation, script ...step) scripted {
	t.Helper()
	if op.Rand == nil {
		op.Rand = rand.New(rand.NewPCG(1, 2))
	}
	run, err := NewRun(t0, p, op)
	if err != nil {
		t.Fatalf("NewRun: got error %v, want nil", err)
	}
	var s scripted
	now := t0
	for {
		a, ok := run.Begin(now)
		if !ok {
			break
		}
		if a.N > len(script) {
			t.Fatalf("attempt %d: got a request beyond the %d-step script", a.N, len(script))
		}
		s.attempts = append(s.attempts, a)
		s.sent++
		out, took := script[a.N-1].respond(a)
		now = now.Add(took)
		d := run.Next(now, out)
		if !d.Retry {
			if d.Result != run.Report().Result {
				t.Fatalf("decision result %v differs from report result %v", d.Result, run.Report().Result)
			}
			break
		}
		now = now.Add(d.Wait)
	}
	if !run.Done() {
		t.Fatalf("run not done after the loop ended")
	}
	s.report = run.Report()
	s.now = now
	return s
}

// newScope returns a fresh single-scope budget with cfg and no global bucket.
func newScope(t *testing.T, cfg BudgetConfig) *ScopeBudget {
	t.Helper()
	b, err := NewBudgets(cfg, BudgetConfig{})
	if err != nil {
		t.Fatalf("NewBudgets: got error %v, want nil", err)
	}
	return b.For("acct_test", "merchant_test")
}

// drain spends every token of b at now.
func drain(b Budget, now time.Time) {
	for b.Withdraw(now).Admitted {
	}
}

// newCircuitT returns a circuit with cfg or fails the test.
func newCircuitT(t *testing.T, cfg BreakerConfig) *Circuit {
	t.Helper()
	c, err := NewCircuit(cfg)
	if err != nil {
		t.Fatalf("NewCircuit: got error %v, want nil", err)
	}
	return c
}

// ms is a shorthand for n milliseconds.
func ms(n int64) time.Duration { return time.Duration(n) * time.Millisecond }
