package retry

import (
	"math"
	"sync"
	"time"
)

// Budget is a shared retry budget: it admits or refuses each retry at once,
// and is refilled by successful calls. First attempts never ask it.
//
// Implementations must be safe for concurrent use and must decide
// immediately: an empty budget is a refusal, never a wait. All time comes
// from the now arguments, so a simulator can drive a budget on a fake clock.
// A fleet-wide implementation (PostgreSQL-backed, for instance) should lease
// tokens in the background and spend them locally, so Withdraw never waits on
// the network; its errors should read as refusals.
type Budget interface {
	// Withdraw spends one retry token if the budget admits a retry at now,
	// reporting the tokens before and after.
	Withdraw(now time.Time) Grant
	// Deposit records a successful call (an answer proving the processor
	// works: a success or a decline), which refills a fraction of a token.
	Deposit(now time.Time)
	// Tokens returns the tokens available at now.
	Tokens(now time.Time) float64
}

// Grant is a Budget's answer to one retry.
type Grant struct {
	// Admitted reports whether the retry may be sent; if so, one token was
	// spent.
	Admitted bool
	// Before and After are the tokens available before and after the
	// decision (equal when the retry was refused).
	Before, After float64
}

// BudgetConfig shapes one token bucket of a retry budget. Each field maps
// onto the retry-policy simulator's budget object, named in brackets.
type BudgetConfig struct {
	// Ratio is the tokens one successful call adds [ratio]; the long-run
	// ratio of retries to successful calls.
	Ratio float64
	// MinPerSec is the floor: tokens added per second whatever the traffic
	// [min_per_sec], so a low-volume scope can still retry an isolated
	// failure. It is the only refill during a full outage.
	MinPerSec float64
	// Burst is the most tokens the bucket holds, and what a new bucket
	// starts with [burst]. At least 1.
	Burst float64
}

// DefaultScopeBudget returns the per-scope (processor account, merchant)
// defaults: 0.15 token per successful call, a floor of one retry per second,
// a burst of 20 (a burst of 10 lets short clusters of errors at a 10 % error rate
// exhaust the scope; see the retry-policy simulator's comparison).
func DefaultScopeBudget() BudgetConfig {
	return BudgetConfig{Ratio: 0.15, MinPerSec: 1, Burst: 20}
}

// DefaultGlobalBudget returns the process-wide defaults: 0.15 token per
// successful call, a floor of 10 retries per second, a burst of 100.
func DefaultGlobalBudget() BudgetConfig {
	return BudgetConfig{Ratio: 0.15, MinPerSec: 10, Burst: 100}
}

// Validate returns a *ConfigError naming the first invalid field, or nil.
func (c BudgetConfig) Validate() error {
	return c.validate("budget.")
}

func (c BudgetConfig) validate(prefix string) error {
	switch {
	case !finite(c.Ratio) || c.Ratio < 0:
		return &ConfigError{Field: prefix + "ratio", Problem: "must be a finite number ≥ 0"}
	case !finite(c.MinPerSec) || c.MinPerSec < 0:
		return &ConfigError{Field: prefix + "min_per_sec", Problem: "must be a finite number ≥ 0"}
	case !finite(c.Burst) || c.Burst < 1:
		return &ConfigError{Field: prefix + "burst", Problem: "must be a finite number ≥ 1"}
	}
	return nil
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// admitEpsilon absorbs floating-point error in sums of fractional deposits,
// so that, for instance, 20 deposits of 0.05 admit a retry.
const admitEpsilon = 1e-9

// bucket is one token bucket. Its methods must be called with mu held.
type bucket struct {
	mu      sync.Mutex
	cfg     BudgetConfig
	tokens  float64
	last    time.Time // when the floor was last accrued
	started bool      // last is set; any time, the zero one included, is valid
}

func newBucket(cfg BudgetConfig) *bucket {
	return &bucket{cfg: cfg, tokens: cfg.Burst}
}

// advance accrues the floor up to now. A now earlier than the last one seen
// (callers racing with their own clock readings) accrues nothing and does not
// move the bucket's clock back.
func (b *bucket) advance(now time.Time) float64 {
	if !b.started {
		b.last, b.started = now, true
		return b.tokens
	}
	if elapsed := now.Sub(b.last); elapsed > 0 {
		b.tokens = min(b.cfg.Burst, b.tokens+elapsed.Seconds()*b.cfg.MinPerSec)
		b.last = now
	}
	return b.tokens
}

func (b *bucket) deposit() {
	b.tokens = min(b.cfg.Burst, b.tokens+b.cfg.Ratio)
}

func (b *bucket) spend() {
	b.tokens = max(b.tokens-1, 0)
}

// Budgets is the in-process retry budget: a token bucket per scope
// (processor account, merchant) under one global bucket. A retry needs a
// token from both, so one merchant's outage cannot spend another's
// allowance, and the global bucket caps the retries of the whole process.
// Every successful call refills both. Budgets is safe for concurrent use.
type Budgets struct {
	scopeCfg BudgetConfig
	global   *bucket

	mu     sync.RWMutex
	scopes map[scopeKey]*ScopeBudget
}

type scopeKey struct{ account, merchant string }

// NewBudgets returns the budgets for the given per-scope and global bucket
// configurations, or a *ConfigError. A zero global configuration means no
// global bucket: each scope stands alone (the retry-policy simulator's
// single budget).
func NewBudgets(scope, global BudgetConfig) (*Budgets, error) {
	if err := scope.Validate(); err != nil {
		return nil, err
	}
	b := &Budgets{scopeCfg: scope, scopes: make(map[scopeKey]*ScopeBudget)}
	if global != (BudgetConfig{}) {
		if err := global.validate("global_budget."); err != nil {
			return nil, err
		}
		b.global = newBucket(global)
	}
	return b, nil
}

// For returns the budget of one processor account and merchant, creating it
// full on first use. The returned *ScopeBudget is cheap to keep and reuse.
func (b *Budgets) For(account, merchant string) *ScopeBudget {
	k := scopeKey{account, merchant}
	b.mu.RLock()
	s, ok := b.scopes[k]
	b.mu.RUnlock()
	if ok {
		return s
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if s, ok := b.scopes[k]; ok {
		return s
	}
	s = &ScopeBudget{scope: newBucket(b.scopeCfg), global: b.global}
	b.scopes[k] = s
	return s
}

// ScopeBudget is the Budget of one scope: its own bucket under the global
// one. Its token counts are the smaller of the two buckets', so they explain
// every decision: a retry is admitted exactly when at least one token is
// available.
type ScopeBudget struct {
	scope  *bucket
	global *bucket // nil without a global bucket
}

var _ Budget = (*ScopeBudget)(nil)

// lock takes both buckets' locks, always scope first then global, so a
// decision is atomic without a refund path.
func (s *ScopeBudget) lock() {
	s.scope.mu.Lock()
	if s.global != nil {
		s.global.mu.Lock()
	}
}

func (s *ScopeBudget) unlock() {
	if s.global != nil {
		s.global.mu.Unlock()
	}
	s.scope.mu.Unlock()
}

// level accrues both buckets to now and returns the available tokens: the
// smaller of the two. Called with both locks held.
func (s *ScopeBudget) level(now time.Time) float64 {
	l := s.scope.advance(now)
	if s.global != nil {
		l = min(l, s.global.advance(now))
	}
	return l
}

// Withdraw spends one token from the scope and one from the global bucket
// when both hold at least one at now; otherwise it refuses at once.
func (s *ScopeBudget) Withdraw(now time.Time) Grant {
	s.lock()
	defer s.unlock()
	g := Grant{Before: s.level(now)}
	if g.Before > 1-admitEpsilon {
		s.scope.spend()
		if s.global != nil {
			s.global.spend()
		}
		g.Admitted = true
	}
	g.After = s.scope.tokens
	if s.global != nil {
		g.After = min(g.After, s.global.tokens)
	}
	return g
}

// Deposit adds the configured fraction of a token to the scope and global
// buckets, up to their bursts.
func (s *ScopeBudget) Deposit(now time.Time) {
	s.lock()
	defer s.unlock()
	s.level(now)
	s.scope.deposit()
	if s.global != nil {
		s.global.deposit()
	}
}

// Tokens returns the tokens available at now: the smaller of the scope's and
// the global bucket's.
func (s *ScopeBudget) Tokens(now time.Time) float64 {
	s.lock()
	defer s.unlock()
	return s.level(now)
}
