package retry

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// processor is a fake processor for Do: it answers each request from a
// script, in order, on the synctest bubble's clock.
type processor struct {
	mu     sync.Mutex
	script []step
	calls  []Attempt
	at     []time.Time
}

func (p *processor) attempt(ctx context.Context, a Attempt) Outcome {
	p.mu.Lock()
	n := len(p.calls)
	p.calls = append(p.calls, a)
	p.at = append(p.at, time.Now())
	p.mu.Unlock()
	if n >= len(p.script) {
		panic(fmt.Sprintf("request %d beyond the %d-step script", n+1, len(p.script)))
	}
	s := p.script[n]
	if s.timeout {
		<-ctx.Done() // sent, never answered
		return Outcome{Class: ClassOutcomeUnknown, MaybeExecuted: true}
	}
	select {
	case <-time.After(s.latency):
		out, _ := s.respond(a)
		return out
	case <-ctx.Done():
		return Outcome{Class: ClassOutcomeUnknown, MaybeExecuted: true}
	}
}

func (p *processor) requests() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.calls)
}

func TestDoRetriesInRealTime(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		proc := &processor{script: []step{unavail503, unavail503, ok200}}
		start := time.Now()
		rep, err := Do(t.Context(), DefaultPolicy(), Operation{IdempotencyKey: "pg_ch_1", Rand: rand.New(rand.NewPCG(3, 4))}, proc.attempt)
		if err != nil {
			t.Fatalf("Do: got error %v, want nil", err)
		}
		if got, want := rep.Result.String(), "succeeded"; got != want {
			t.Fatalf("result: got %s, want %s", got, want)
		}
		if got := proc.requests(); got != 3 {
			t.Fatalf("requests: got %d, want 3", got)
		}
		// Each attempt starts exactly when the previous one ended plus its
		// chosen delay, and carries the one key.
		want := start
		for i, a := range rep.Attempts {
			if !proc.at[i].Equal(want) || !a.StartedAt.Equal(want) {
				t.Errorf("attempt %d started at %v (processor saw %v), want %v", i+1, a.StartedAt.Sub(start), proc.at[i].Sub(start), want.Sub(start))
			}
			if proc.calls[i].IdempotencyKey != "pg_ch_1" {
				t.Errorf("attempt %d key: got %q, want pg_ch_1", i+1, proc.calls[i].IdempotencyKey)
			}
			want = want.Add(a.Duration + a.Delay)
		}
		if got := time.Since(start); got != rep.End.Sub(rep.Start) {
			t.Errorf("elapsed: got %v, want %v", got, rep.End.Sub(rep.Start))
		}
	})
}

func TestDoCancelDuringBackoff(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		proc := &processor{script: []step{
			{class: ClassRetryAfter, status: 429, retryAfter: "3", latency: ms(10)},
			ok200,
		}}
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancel)
		start := time.Now()
		rep, err := Do(ctx, DefaultPolicy(), Operation{IdempotencyKey: "k"}, proc.attempt)
		if err != nil {
			t.Fatalf("Do: got error %v, want nil", err)
		}
		if got := time.Since(start); got != time.Second {
			t.Errorf("Do returned after %v, want at once on cancellation (1s)", got)
		}
		time.Sleep(time.Minute) // long past the retry's time
		if got := proc.requests(); got != 1 {
			t.Errorf("requests: got %d, want 1 (none after cancellation)", got)
		}
		if got, want := rep.Result.String(), "failed:canceled"; got != want {
			t.Errorf("result: got %s, want %s", got, want)
		}
	})
}

func TestDoCancelAfterSend(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		cfg := DefaultBreakerConfig()
		cfg.ConsecutiveFailures = 1
		c := newCircuitT(t, cfg)
		proc := &processor{script: []step{timedOut}}
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(500*time.Millisecond, cancel)
		rep, err := Do(ctx, DefaultPolicy(), Operation{IdempotencyKey: "k", Breaker: c}, proc.attempt)
		if err != nil {
			t.Fatalf("Do: got error %v, want nil", err)
		}
		if got, want := rep.Result.String(), "pending"; got != want {
			t.Errorf("result: got %s, want %s (the request was sent)", got, want)
		}
		if rep.Stop != StopCanceled {
			t.Errorf("stop reason: got %s, want %s", rep.Stop, StopCanceled)
		}
		if got := c.State(time.Now()); got != BreakerClosed {
			t.Errorf("breaker: got %s, want %s (a cancellation is not a processor failure)", got, BreakerClosed)
		}
	})
}

func TestDoAttemptTimeouts(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		proc := &processor{script: []step{timedOut, timedOut, timedOut}}
		var deadlines []time.Duration
		start := time.Now()
		fn := func(ctx context.Context, a Attempt) Outcome {
			d, _ := ctx.Deadline()
			deadlines = append(deadlines, time.Until(d))
			return proc.attempt(ctx, a)
		}
		rep, err := Do(t.Context(), DefaultPolicy(), Operation{IdempotencyKey: "k"}, fn)
		if err != nil {
			t.Fatalf("Do: got error %v, want nil", err)
		}
		if got, want := rep.Result.String(), "pending"; got != want {
			t.Errorf("result: got %s, want %s", got, want)
		}
		if rep.Stop != StopDeadline {
			t.Errorf("stop reason: got %s, want %s", rep.Stop, StopDeadline)
		}
		if deadlines[0] != 4*time.Second {
			t.Errorf("first attempt's context deadline: got %v, want 4s", deadlines[0])
		}
		for i, a := range rep.Attempts {
			if deadlines[i] != a.Timeout {
				t.Errorf("attempt %d context deadline: got %v, want its timeout %v", i+1, deadlines[i], a.Timeout)
			}
		}
		if got := time.Since(start); got > 8*time.Second-100*time.Millisecond {
			t.Errorf("Do returned after %v, want within the deadline minus the answer margin", got)
		}
	})
}

func TestDoContextDeadline(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
		defer cancel()
		proc := &processor{script: []step{ok200}}
		rep, err := Do(ctx, DefaultPolicy(), Operation{IdempotencyKey: "k"}, proc.attempt)
		if err != nil {
			t.Fatalf("Do: got error %v, want nil", err)
		}
		if got, want := rep.Deadline.Sub(rep.Start), 2*time.Second; got != want {
			t.Errorf("deadline: got start+%v, want start+%v", got, want)
		}
		if got, want := rep.Attempts[0].Timeout, 1900*time.Millisecond; got != want {
			t.Errorf("attempt timeout: got %v, want %v", got, want)
		}
	})
}

func TestDoAlreadyCanceled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	proc := &processor{}
	rep, err := Do(ctx, DefaultPolicy(), Operation{IdempotencyKey: "k"}, proc.attempt)
	if err != nil {
		t.Fatalf("Do: got error %v, want nil", err)
	}
	if got, want := rep.Result.String(), "failed:canceled"; got != want {
		t.Errorf("result: got %s, want %s", got, want)
	}
	if proc.requests() != 0 {
		t.Errorf("requests: got %d, want 0", proc.requests())
	}
}

func TestDoInvalidPolicy(t *testing.T) {
	t.Parallel()
	_, err := Do(t.Context(), Policy{}, Operation{}, (&processor{}).attempt)
	if !errors.Is(err, ErrInvalidPolicy) {
		t.Errorf("Do with a zero policy: got %v, want ErrInvalidPolicy", err)
	}
}

func TestDoLogsDecisions(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		core, logs := observer.New(zapcore.DebugLevel)
		proc := &processor{script: []step{
			{class: ClassRetryAfter, status: 429, code: "rate_limit", retryAfter: "1", latency: ms(10)},
			ok200,
		}}
		op := Operation{IdempotencyKey: "k", Budget: newScope(t, DefaultScopeBudget()), Logger: zap.New(core)}
		if _, err := Do(t.Context(), DefaultPolicy(), op, proc.attempt); err != nil {
			t.Fatalf("Do: got error %v, want nil", err)
		}
		scheduled := logs.FilterMessage("retry scheduled").All()
		if len(scheduled) != 1 {
			t.Fatalf("retry scheduled entries: got %d, want 1", len(scheduled))
		}
		fields := scheduled[0].ContextMap()
		for _, key := range []string{"attempt", "class", "http_status", "processor_code", "retry_after_ms", "backoff_ms", "delay_ms", "budget_tokens", "remaining_ms"} {
			if _, ok := fields[key]; !ok {
				t.Errorf("retry scheduled: got fields %v, want key %q", fields, key)
			}
		}
		if got := fields["retry_after_ms"]; got != int64(1000) {
			t.Errorf("retry_after_ms: got %v, want 1000", got)
		}
		stopped := logs.FilterMessage("retry loop stopped").All()
		if len(stopped) != 1 || stopped[0].ContextMap()["stop_reason"] != string(StopSucceeded) {
			t.Errorf("retry loop stopped: got %v, want one entry with stop_reason succeeded", stopped)
		}
	})
}

// TestDoManyOperationsShareBudget starts many failing operations at once:
// their repeat attempts never exceed the shared budget, its burst plus its
// floor over the time the operations run.
func TestDoManyOperationsShareBudget(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		cfg := BudgetConfig{Ratio: 0.15, MinPerSec: 1, Burst: 10}
		bs, err := NewBudgets(cfg, DefaultGlobalBudget())
		if err != nil {
			t.Fatalf("NewBudgets: got error %v, want nil", err)
		}
		budget := bs.For("acct", "merchant")
		var attempts atomic.Int64
		down := func(ctx context.Context, a Attempt) Outcome {
			attempts.Add(1)
			time.Sleep(40 * time.Millisecond)
			return Outcome{Class: ClassRetry, HTTPStatus: 503}
		}
		const ops = 300
		start := time.Now()
		var wg sync.WaitGroup
		var budgetStops atomic.Int64
		for i := range ops {
			wg.Go(func() {
				rep, err := Do(t.Context(), DefaultPolicy(), Operation{IdempotencyKey: fmt.Sprint("k", i), Budget: budget}, down)
				if err != nil {
					t.Errorf("Do: got error %v, want nil", err)
				}
				if rep.Stop == StopBudget {
					budgetStops.Add(1)
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		retries := attempts.Load() - ops
		limit := int64(cfg.Burst + cfg.MinPerSec*elapsed.Seconds())
		t.Logf("%d operations, %d retries in %v, limit %d", ops, retries, elapsed, limit)
		if retries > limit {
			t.Errorf("retries: got %d in %v, want at most %d (burst + floor)", retries, elapsed, limit)
		}
		if budgetStops.Load() < ops-limit {
			t.Errorf("operations stopped by the budget: got %d, want at least %d", budgetStops.Load(), ops-limit)
		}
	})
}

func TestDoWithoutCancelFinishesSentOperation(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		proc := &processor{script: []step{lost, ok200}}
		caller, hangUp := context.WithCancel(t.Context())
		time.AfterFunc(100*time.Millisecond, hangUp)
		ctx, cancel := context.WithTimeout(context.WithoutCancel(caller), 8*time.Second)
		defer cancel()
		rep, err := Do(ctx, DefaultPolicy(), Operation{IdempotencyKey: "k"}, proc.attempt)
		if err != nil {
			t.Fatalf("Do: got error %v, want nil", err)
		}
		if got, want := rep.Result.String(), "succeeded"; got != want {
			t.Errorf("result: got %s, want %s", got, want)
		}
		if caller.Err() == nil {
			t.Errorf("caller context: got live, want cancelled during the run")
		}
	})
}
