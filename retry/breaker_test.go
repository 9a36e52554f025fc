package retry

import (
	"errors"
	"sync"
	"testing"
	"time"
)

// record admits one attempt at now and reports h for it; it returns whether
// the attempt was admitted.
func record(c *Circuit, now time.Time, h Health) bool {
	tk, ok := c.Allow(now)
	if ok {
		c.Done(now, tk, h)
	}
	return ok
}

func TestCircuitOpensOnConsecutiveFailures(t *testing.T) {
	t.Parallel()
	c := newCircuitT(t, DefaultBreakerConfig())
	n := DefaultBreakerConfig().ConsecutiveFailures
	for i := range n - 1 {
		record(c, t0, HealthFailure)
		if got := c.State(t0); got != BreakerClosed {
			t.Fatalf("after %d failures: got %s, want %s", i+1, got, BreakerClosed)
		}
	}
	record(c, t0, HealthFailure)
	if got := c.State(t0); got != BreakerOpen {
		t.Fatalf("after %d failures: got %s, want %s", n, got, BreakerOpen)
	}
	if _, ok := c.Allow(t0.Add(4 * time.Second)); ok {
		t.Errorf("Allow while open: got admitted, want refused")
	}
}

func TestCircuitHealthyAnswerResetsTheRun(t *testing.T) {
	t.Parallel()
	c := newCircuitT(t, DefaultBreakerConfig())
	for range 10 {
		record(c, t0, HealthFailure)
		record(c, t0, HealthFailure)
		record(c, t0, HealthOK)
	}
	// Two failures in every three outcomes: never 5 in a row, but the ratio
	// rule (50 % of at least 20 outcomes) opens it.
	if got := c.State(t0); got != BreakerOpen {
		t.Errorf("after two failures in every three outcomes: got %s, want %s", got, BreakerOpen)
	}
}

// TestCircuitIgnoresDeclinesAndClientErrors runs a card-testing attack
// through the loop: thousands of declines and 4xx answers never open the
// breaker, while the same count of 503s does.
func TestCircuitIgnoresDeclinesAndClientErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		answer   step
		wantOpen bool
	}{
		{"declines", decline402, false},
		{"422 invalid", invalid422, false},
		{"429 rate limit", step{class: ClassRetryAfter, status: 429, retryAfter: "100", latency: ms(5)}, false},
		{"409 key in use", step{class: ClassBusy, status: 409, latency: ms(5)}, false},
		{"replayed stored answers", step{class: ClassStoredResult, status: 500, latency: ms(5)}, false},
		{"503", unavail503, true},
		{"refusals", refused, true},
		{"timeouts", timedOut, true},
		{"500 on a keyed write", step{class: ClassUnknownFinal, status: 500, latency: ms(5)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newCircuitT(t, DefaultBreakerConfig())
			p := DefaultPolicy()
			p.MaxAttempts = 1
			for range 1000 {
				runScript(t, p, Operation{IdempotencyKey: "k", Breaker: c}, tt.answer)
			}
			if got, want := c.State(t0), tt.wantOpen; (got == BreakerOpen) != want {
				t.Errorf("state after 1000 %s: got %s, want open=%v", tt.name, got, want)
			}
		})
	}
}

func TestCircuitHalfOpen(t *testing.T) {
	t.Parallel()
	cfg := DefaultBreakerConfig()
	open := func(t *testing.T) *Circuit {
		t.Helper()
		c := newCircuitT(t, cfg)
		for range cfg.ConsecutiveFailures {
			record(c, t0, HealthFailure)
		}
		return c
	}
	probeAt := t0.Add(cfg.OpenFor)

	t.Run("admits Probes at once, closes after that many successes", func(t *testing.T) {
		t.Parallel()
		c := open(t)
		var tickets []Ticket
		for range cfg.Probes {
			tk, ok := c.Allow(probeAt)
			if !ok {
				t.Fatalf("probe: got refused, want admitted")
			}
			tickets = append(tickets, tk)
		}
		if _, ok := c.Allow(probeAt); ok {
			t.Errorf("probe beyond %d: got admitted, want refused", cfg.Probes)
		}
		if got := c.State(probeAt); got != BreakerHalfOpen {
			t.Errorf("state: got %s, want %s", got, BreakerHalfOpen)
		}
		for _, tk := range tickets {
			c.Done(probeAt, tk, HealthOK)
		}
		if got := c.State(probeAt); got != BreakerClosed {
			t.Errorf("state after healthy probes: got %s, want %s", got, BreakerClosed)
		}
	})
	t.Run("one failed probe opens it again", func(t *testing.T) {
		t.Parallel()
		c := open(t)
		record(c, probeAt, HealthFailure)
		if got := c.State(probeAt); got != BreakerOpen {
			t.Errorf("state: got %s, want %s", got, BreakerOpen)
		}
		if got := c.State(probeAt.Add(cfg.OpenFor)); got != BreakerHalfOpen {
			t.Errorf("state after another OpenFor: got %s, want %s", got, BreakerHalfOpen)
		}
	})
	t.Run("a neutral probe frees its slot", func(t *testing.T) {
		t.Parallel()
		c := open(t)
		for range 10 {
			if !record(c, probeAt, HealthNeutral) {
				t.Fatalf("probe after neutral answers: got refused, want admitted")
			}
		}
		if got := c.State(probeAt); got != BreakerHalfOpen {
			t.Errorf("state: got %s, want %s", got, BreakerHalfOpen)
		}
	})
	t.Run("unanswered probes expire", func(t *testing.T) {
		t.Parallel()
		c := open(t)
		var stale []Ticket
		for range cfg.Probes {
			tk, _ := c.Allow(probeAt)
			stale = append(stale, tk)
		}
		later := probeAt.Add(cfg.OpenFor)
		tk, ok := c.Allow(later)
		if !ok {
			t.Fatalf("probe after the round expired: got refused, want admitted")
		}
		for _, s := range stale {
			c.Done(later, s, HealthFailure) // late answers of the abandoned round
		}
		if got := c.State(later); got != BreakerHalfOpen {
			t.Errorf("state after stale failures: got %s, want %s (stale tickets ignored)", got, BreakerHalfOpen)
		}
		c.Done(later, tk, HealthOK)
	})
}

func TestCircuitStaleTicketIgnored(t *testing.T) {
	t.Parallel()
	c := newCircuitT(t, DefaultBreakerConfig())
	old, _ := c.Allow(t0)
	for range DefaultBreakerConfig().ConsecutiveFailures {
		record(c, t0, HealthFailure)
	}
	record(c, t0.Add(5*time.Second), HealthOK)
	record(c, t0.Add(5*time.Second), HealthOK)
	record(c, t0.Add(5*time.Second), HealthOK)
	c.Done(t0.Add(5*time.Second), old, HealthFailure)
	if got := c.State(t0.Add(5 * time.Second)); got != BreakerClosed {
		t.Errorf("state after a stale failure: got %s, want %s", got, BreakerClosed)
	}
}

func TestCircuitWindowSlides(t *testing.T) {
	t.Parallel()
	cfg := DefaultBreakerConfig()
	cfg.ConsecutiveFailures = 1000 // only the ratio rule
	c := newCircuitT(t, cfg)
	// 15 failures, then 25 s of quiet: they leave the window.
	for range 15 {
		record(c, t0, HealthFailure)
	}
	now := t0.Add(25 * time.Second)
	for range 5 {
		record(c, now, HealthFailure)
	}
	if got := c.State(now); got != BreakerClosed {
		t.Errorf("state with old failures out of the window: got %s, want %s", got, BreakerClosed)
	}
	for range 15 {
		record(c, now, HealthFailure)
	}
	if got := c.State(now); got != BreakerOpen {
		t.Errorf("state with 20 recent failures: got %s, want %s", got, BreakerOpen)
	}
}

func TestCircuitsPerAccount(t *testing.T) {
	t.Parallel()
	cs, err := NewCircuits(DefaultBreakerConfig())
	if err != nil {
		t.Fatalf("NewCircuits: got error %v, want nil", err)
	}
	for range DefaultBreakerConfig().ConsecutiveFailures {
		record(cs.For("acct_down"), t0, HealthFailure)
	}
	if got := cs.For("acct_down").State(t0); got != BreakerOpen {
		t.Errorf("failing account: got %s, want %s", got, BreakerOpen)
	}
	if got := cs.For("acct_up").State(t0); got != BreakerClosed {
		t.Errorf("other account: got %s, want %s", got, BreakerClosed)
	}
}

func TestCircuitConcurrentUse(t *testing.T) {
	t.Parallel()
	c := newCircuitT(t, DefaultBreakerConfig())
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				now := t0.Add(time.Duration(i) * 10 * time.Millisecond)
				h := HealthOK
				if (i+g)%3 == 0 {
					h = HealthFailure
				}
				record(c, now, h)
			}
		})
	}
	wg.Wait()
}

func TestBreakerConfigValidate(t *testing.T) {
	t.Parallel()
	bad := DefaultBreakerConfig()
	bad.FailureRatio = 1.5
	var ce *ConfigError
	if _, err := NewCircuit(bad); !errors.As(err, &ce) || ce.Field != "breaker.failure_ratio" {
		t.Errorf("NewCircuit with ratio 1.5: got %v, want a *ConfigError for breaker.failure_ratio", err)
	}
	if err := DefaultBreakerConfig().Validate(); err != nil {
		t.Errorf("DefaultBreakerConfig().Validate(): got %v, want nil", err)
	}
}
