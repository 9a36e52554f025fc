package retry

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestBudgetBurstThenRefusal(t *testing.T) {
	t.Parallel()
	b := newScope(t, BudgetConfig{Ratio: 0.15, MinPerSec: 1, Burst: 3})
	for i := range 3 {
		g := b.Withdraw(t0)
		if !g.Admitted {
			t.Fatalf("withdrawal %d: got refused, want admitted", i+1)
		}
		if want := float64(3 - i); g.Before != want || g.After != want-1 {
			t.Errorf("withdrawal %d: got %v → %v, want %v → %v", i+1, g.Before, g.After, want, want-1)
		}
	}
	if g := b.Withdraw(t0); g.Admitted || g.Before != 0 || g.After != 0 {
		t.Errorf("empty bucket: got %+v, want refused at 0 → 0", g)
	}
}

func TestBudgetRefill(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		cfg      BudgetConfig
		deposits int
		after    time.Duration
		want     float64
	}{
		{"floor accrues per second", BudgetConfig{Ratio: 0.15, MinPerSec: 1, Burst: 10}, 0, 1500 * time.Millisecond, 1.5},
		{"no floor, no success: nothing", BudgetConfig{Ratio: 0.15, MinPerSec: 0, Burst: 10}, 0, time.Hour, 0},
		{"each success adds the ratio", BudgetConfig{Ratio: 0.15, MinPerSec: 0, Burst: 10}, 4, 0, 0.6},
		{"capped at the burst", BudgetConfig{Ratio: 0.15, MinPerSec: 1, Burst: 10}, 1000, time.Hour, 10},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := newScope(t, tt.cfg)
			drain(b, t0)
			now := t0.Add(tt.after)
			for range tt.deposits {
				b.Deposit(now)
			}
			if got := b.Tokens(now); math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("tokens: got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestBudgetOutageCannotRefill runs failing operations through the loop: no
// failure adds a token, so only the floor lets retries through.
func TestBudgetOutageCannotRefill(t *testing.T) {
	t.Parallel()
	b := newScope(t, BudgetConfig{Ratio: 0.15, MinPerSec: 0, Burst: 2})
	p := DefaultPolicy()
	retries := 0
	for i := range 20 {
		s := runScript(t, p, Operation{IdempotencyKey: fmt.Sprint("k", i), Budget: b},
			unavail503, unavail503, unavail503, unavail503)
		retries += s.report.Retries()
	}
	if retries != 2 {
		t.Errorf("retries over 20 failing operations: got %d, want 2 (the burst)", retries)
	}
	if got := b.Tokens(t0.Add(time.Hour)); got != 0 {
		t.Errorf("tokens after the outage: got %v, want 0", got)
	}
}

func TestBudgetOriginalsNeverSpend(t *testing.T) {
	t.Parallel()
	b := newScope(t, BudgetConfig{Ratio: 0.15, MinPerSec: 0, Burst: 1})
	drain(b, t0)
	for i := range 10 {
		s := runScript(t, DefaultPolicy(), Operation{IdempotencyKey: fmt.Sprint("k", i), Budget: b}, invalid422)
		if got := len(s.report.Attempts); got != 1 {
			t.Fatalf("attempts: got %d, want 1 (an original needs no token)", got)
		}
	}
	s := runScript(t, DefaultPolicy(), Operation{IdempotencyKey: "ok", Budget: b}, ok200)
	if a := s.report.Attempts[0]; a.TokensAfter != 0.15 {
		t.Errorf("tokens after one success: got %v, want 0.15", a.TokensAfter)
	}
}

func TestBudgetGlobalCapsScopes(t *testing.T) {
	t.Parallel()
	bs, err := NewBudgets(BudgetConfig{Ratio: 0.15, MinPerSec: 0, Burst: 10}, BudgetConfig{Ratio: 0.15, MinPerSec: 0, Burst: 3})
	if err != nil {
		t.Fatalf("NewBudgets: got error %v, want nil", err)
	}
	admitted := 0
	for i := range 5 {
		if bs.For("acct", fmt.Sprint("m", i)).Withdraw(t0).Admitted {
			admitted++
		}
	}
	if admitted != 3 {
		t.Errorf("admitted across 5 scopes: got %d, want 3 (the global burst)", admitted)
	}
	if got := bs.For("acct", "m4").Tokens(t0); got != 0 {
		t.Errorf("tokens of an untouched scope under an empty global bucket: got %v, want 0", got)
	}
}

func TestBudgetScopesAreIsolated(t *testing.T) {
	t.Parallel()
	bs, err := NewBudgets(DefaultScopeBudget(), DefaultGlobalBudget())
	if err != nil {
		t.Fatalf("NewBudgets: got error %v, want nil", err)
	}
	drain(bs.For("acct_1", "merchant_a"), t0)
	if !bs.For("acct_1", "merchant_b").Withdraw(t0).Admitted {
		t.Errorf("another merchant: got refused, want admitted")
	}
	if !bs.For("acct_2", "merchant_a").Withdraw(t0).Admitted {
		t.Errorf("another account: got refused, want admitted")
	}
	first, again := bs.For("acct_1", "merchant_a"), bs.For("acct_1", "merchant_a")
	if first != again {
		t.Errorf("For: got distinct budgets for one scope, want the same")
	}
}

func TestBudgetClockGoingBackwards(t *testing.T) {
	t.Parallel()
	b := newScope(t, BudgetConfig{Ratio: 0, MinPerSec: 1, Burst: 5})
	drain(b, t0.Add(time.Minute))
	if got := b.Tokens(t0); got != 0 {
		t.Errorf("tokens at an earlier time: got %v, want 0", got)
	}
	if got := b.Tokens(t0.Add(time.Minute + 2*time.Second)); got != 2 {
		t.Errorf("tokens 2 s after the last reading: got %v, want 2", got)
	}
}

// TestBudgetConcurrentWithdrawals checks under the race detector that
// concurrent withdrawals never admit more than the tokens available.
func TestBudgetConcurrentWithdrawals(t *testing.T) {
	t.Parallel()
	bs, err := NewBudgets(BudgetConfig{Ratio: 0.5, MinPerSec: 0, Burst: 50}, BudgetConfig{Ratio: 0.5, MinPerSec: 0, Burst: 80})
	if err != nil {
		t.Fatalf("NewBudgets: got error %v, want nil", err)
	}
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			s := bs.For("acct", fmt.Sprint("m", g%2))
			for range 100 {
				if s.Withdraw(t0).Admitted {
					admitted.Add(1)
				}
				s.Tokens(t0)
			}
		})
	}
	wg.Wait()
	if got := admitted.Load(); got != 80 {
		t.Errorf("admitted: got %d, want 80 (two scopes of 50 under a global 80)", got)
	}
}

func TestBudgetConfigValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cfg   BudgetConfig
		field string
	}{
		{BudgetConfig{Ratio: -0.1, MinPerSec: 1, Burst: 10}, "budget.ratio"},
		{BudgetConfig{Ratio: math.NaN(), MinPerSec: 1, Burst: 10}, "budget.ratio"},
		{BudgetConfig{Ratio: 0.1, MinPerSec: math.Inf(1), Burst: 10}, "budget.min_per_sec"},
		{BudgetConfig{Ratio: 0.1, MinPerSec: 1, Burst: 0.5}, "budget.burst"},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != tt.field {
			t.Errorf("Validate(%+v): got %v, want a *ConfigError for %s", tt.cfg, err, tt.field)
		}
	}
	if _, err := NewBudgets(DefaultScopeBudget(), BudgetConfig{Burst: -1}); !errors.Is(err, ErrInvalidPolicy) {
		t.Errorf("NewBudgets with an invalid global bucket: got %v, want ErrInvalidPolicy", err)
	}
}

// benchBudget returns a scope budget under a global bucket, as in
// production.
func benchBudget(b *testing.B) *Budgets {
	b.Helper()
	bs, err := NewBudgets(DefaultScopeBudget(), DefaultGlobalBudget())
	if err != nil {
		b.Fatal(err)
	}
	return bs
}

// BenchmarkBudgetWithdraw measures one retry decision, uncontended: mostly
// refusals once the burst is spent, with the floor admitting about one in a
// thousand.
func BenchmarkBudgetWithdraw(b *testing.B) {
	s := benchBudget(b).For("acct", "merchant")
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Millisecond)
		s.Withdraw(now)
	}
}

// BenchmarkBudgetWithdrawAdmitted measures admitted decisions, which also
// write both buckets.
func BenchmarkBudgetWithdrawAdmitted(b *testing.B) {
	bs, err := NewBudgets(BudgetConfig{Ratio: 0.15, MinPerSec: 1e12, Burst: 10}, BudgetConfig{Ratio: 0.15, MinPerSec: 1e12, Burst: 100})
	if err != nil {
		b.Fatal(err)
	}
	s := bs.For("acct", "merchant")
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Microsecond)
		if !s.Withdraw(now).Admitted {
			b.Fatal("refused, want admitted")
		}
	}
}

// BenchmarkBudgetDeposit measures the refill on every successful call.
func BenchmarkBudgetDeposit(b *testing.B) {
	s := benchBudget(b).For("acct", "merchant")
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Millisecond)
		s.Deposit(now)
	}
}

// BenchmarkBudgetFor measures the scope lookup done once per operation.
func BenchmarkBudgetFor(b *testing.B) {
	bs := benchBudget(b)
	bs.For("acct_1JtZr2", "merchant_8812")
	b.ReportAllocs()
	for b.Loop() {
		bs.For("acct_1JtZr2", "merchant_8812")
	}
}

// BenchmarkBudgetWithdrawParallelSameScope measures decisions contended on
// one scope and the global bucket.
func BenchmarkBudgetWithdrawParallelSameScope(b *testing.B) {
	s := benchBudget(b).For("acct", "merchant")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		now := t0
		for pb.Next() {
			now = now.Add(time.Millisecond)
			s.Withdraw(now)
		}
	})
}

// BenchmarkBudgetWithdrawParallelScopes measures decisions of distinct
// scopes contended only on the global bucket.
func BenchmarkBudgetWithdrawParallelScopes(b *testing.B) {
	bs := benchBudget(b)
	var next atomic.Int64
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		s := bs.For("acct", fmt.Sprint("merchant_", next.Add(1)))
		now := t0
		for pb.Next() {
			now = now.Add(time.Millisecond)
			s.Withdraw(now)
		}
	})
}

// TestBudgetZeroTimeClock checks that a fake clock starting at the zero
// time accrues the floor like any other.
func TestBudgetZeroTimeClock(t *testing.T) {
	t.Parallel()
	b := newScope(t, BudgetConfig{Ratio: 0, MinPerSec: 1, Burst: 5})
	var zero time.Time
	drain(b, zero)
	if got := b.Tokens(zero.Add(3 * time.Second)); got != 3 {
		t.Errorf("tokens 3 s after the zero time: got %v, want 3", got)
	}
}
