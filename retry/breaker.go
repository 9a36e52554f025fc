package retry

import (
	"sync"
	"time"
)

// Breaker is a circuit breaker guarding one processor account. The loop asks
// it before every attempt, the first one included, and tells it each
// attempt's Health.
//
// Implementations must be safe for concurrent use and take all time from the
// now arguments, so a simulator can drive one on a fake clock.
type Breaker interface {
	// Allow reports whether an attempt may be sent at now. The ticket must
	// be handed back to Done with the attempt's health.
	Allow(now time.Time) (Ticket, bool)
	// Done records the health of an attempt admitted by Allow.
	Done(now time.Time, t Ticket, h Health)
}

// Ticket identifies an admitted attempt to its Breaker, so that an answer
// arriving after the breaker changed state is not counted against the new
// state. Its value is opaque.
type Ticket uint64

// BreakerState is the state of a Circuit. The values are stable.
type BreakerState string

// The circuit states.
const (
	// BreakerClosed: attempts flow; health failures are counted.
	BreakerClosed BreakerState = "closed"
	// BreakerOpen: attempts are refused until BreakerConfig.OpenFor passes.
	BreakerOpen BreakerState = "open"
	// BreakerHalfOpen: a few probe attempts test whether the processor has
	// recovered.
	BreakerHalfOpen BreakerState = "half_open"
)

// BreakerConfig shapes a Circuit.
type BreakerConfig struct {
	// ConsecutiveFailures opens the circuit after this many health failures
	// in a row.
	ConsecutiveFailures int
	// FailureRatio opens the circuit when at least this share of the counted
	// outcomes of the last Window were health failures, ...
	FailureRatio float64
	// MinRequests ... once the window counts at least this many outcomes.
	MinRequests int
	// Window is the span of the failure ratio, a sliding window.
	Window time.Duration
	// OpenFor is how long the circuit stays open before probing. It also
	// bounds how long a half-open circuit waits for its probes' answers.
	OpenFor time.Duration
	// Probes is how many attempts a half-open circuit admits at once; that
	// many healthy answers close it, and one health failure opens it again.
	Probes int
}

// DefaultBreakerConfig returns the per-account defaults: open after 10
// consecutive health failures, or 50 % of at least 20 outcomes in 10 s; stay
// open 5 s; close after 3 healthy probes. Ten in a row keeps a busy account
// with a 10 % error rate from tripping by chance (once in 10¹⁰ attempts,
// against once in 10⁵ for five), while a quiet account still opens within
// ten failed calls.
func DefaultBreakerConfig() BreakerConfig {
	return BreakerConfig{
		ConsecutiveFailures: 10,
		FailureRatio:        0.5,
		MinRequests:         20,
		Window:              10 * time.Second,
		OpenFor:             5 * time.Second,
		Probes:              3,
	}
}

// Validate returns a *ConfigError naming the first invalid field, or nil.
func (c BreakerConfig) Validate() error {
	switch {
	case c.ConsecutiveFailures < 1:
		return &ConfigError{Field: "breaker.consecutive_failures", Problem: "must be at least 1"}
	case !(c.FailureRatio > 0 && c.FailureRatio <= 1):
		return &ConfigError{Field: "breaker.failure_ratio", Problem: "must be in (0, 1]"}
	case c.MinRequests < 1:
		return &ConfigError{Field: "breaker.min_requests", Problem: "must be at least 1"}
	case c.Window <= 0:
		return &ConfigError{Field: "breaker.window_ms", Problem: "must be positive"}
	case c.OpenFor <= 0:
		return &ConfigError{Field: "breaker.open_for_ms", Problem: "must be positive"}
	case c.Probes < 1:
		return &ConfigError{Field: "breaker.probes", Problem: "must be at least 1"}
	}
	return nil
}

// Circuit is a circuit breaker with an injected clock: closed, open after
// too many processor-health failures, half-open with a few probes after
// OpenFor. Only HealthFailure counts against it; HealthNeutral outcomes (4xx,
// rate limits, cancellations) are ignored. Circuit is safe for concurrent
// use.
type Circuit struct {
	cfg BreakerConfig

	mu          sync.Mutex
	state       BreakerState
	generation  uint64    // changes with every state change; tickets carry it
	until       time.Time // open: when probing starts; half-open: when probes are overdue
	consecutive int       // health failures in a row (closed)
	window      slidingCounts
	probing     int // half-open: probes admitted and not yet answered
	healthy     int // half-open: healthy probe answers

	// held is when a circuit opened by another replica of the fleet starts probing again:
	// until then this one is open too (see holdOpen). Zero in a process-wide circuit.
	held time.Time
	// opened, when set, is told of every opening this circuit decided itself (not one
	// held for the fleet). It is called with mu held and must not block.
	opened func(until time.Time)
}

var _ Breaker = (*Circuit)(nil)

// NewCircuit returns a closed circuit, or a *ConfigError.
func NewCircuit(cfg BreakerConfig) (*Circuit, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return newCircuit(cfg), nil
}

func newCircuit(cfg BreakerConfig) *Circuit {
	return &Circuit{cfg: cfg, state: BreakerClosed, window: slidingCounts{span: cfg.Window}}
}

// State returns the circuit's state at now.
func (c *Circuit) State(now time.Time) BreakerState {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick(now)
	return c.state
}

// OpenUntil returns when an open circuit starts probing again: the earliest time a new
// attempt may be admitted. It returns the zero time when the circuit is not open at now.
func (c *Circuit) OpenUntil(now time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick(now)
	if c.state != BreakerOpen {
		return time.Time{}
	}
	return c.until
}

// Allow admits every attempt while closed, none while open, and up to
// Probes concurrent probes while half-open.
func (c *Circuit) Allow(now time.Time) (Ticket, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick(now)
	switch c.state {
	case BreakerClosed:
		return Ticket(c.generation), true
	case BreakerHalfOpen:
		if c.probing < c.cfg.Probes {
			if c.probing == 0 {
				c.until = now.Add(c.cfg.OpenFor) // this round's answers are due by then
			}
			c.probing++
			return Ticket(c.generation), true
		}
	}
	return 0, false
}

// Done records an admitted attempt's health. Answers to tickets of an
// earlier state are ignored.
func (c *Circuit) Done(now time.Time, t Ticket, h Health) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.tick(now)
	if uint64(t) != c.generation {
		return
	}
	switch c.state {
	case BreakerClosed:
		switch h {
		case HealthOK:
			c.consecutive = 0
			c.window.add(now, false)
		case HealthFailure:
			c.consecutive++
			c.window.add(now, true)
			if c.consecutive >= c.cfg.ConsecutiveFailures || c.window.trips(now, c.cfg) {
				c.open(now)
			}
		}
	case BreakerHalfOpen:
		c.probing = max(c.probing-1, 0)
		switch h {
		case HealthOK:
			c.healthy++
			if c.healthy >= c.cfg.Probes {
				c.setState(BreakerClosed, now)
			}
		case HealthFailure:
			c.open(now)
		}
	}
}

// tick applies the transitions due by now: open while another replica holds
// the circuit open, open to half-open after OpenFor, and a fresh half-open
// round when probes went unanswered for OpenFor (an attempt whose Done never
// came must not block probing forever).
func (c *Circuit) tick(now time.Time) {
	if now.Before(c.held) && (c.state != BreakerOpen || c.until.Before(c.held)) {
		if c.state != BreakerOpen {
			c.setState(BreakerOpen, now)
		}
		c.until = c.held
	}
	switch c.state {
	case BreakerOpen:
		if !now.Before(c.until) {
			c.setState(BreakerHalfOpen, now)
		}
	case BreakerHalfOpen:
		if c.probing > 0 && !now.Before(c.until) {
			c.setState(BreakerHalfOpen, now)
		}
	}
}

func (c *Circuit) open(now time.Time) {
	c.setState(BreakerOpen, now)
	if c.opened != nil {
		c.opened(c.until)
	}
}

// holdOpen keeps the circuit open until at least until, as another replica of the
// fleet opened it: from the next decision on, it refuses attempts until then and then
// probes like any open circuit. A time already passed changes nothing.
func (c *Circuit) holdOpen(until time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if until.After(c.held) {
		c.held = until
	}
}

// setState enters a state, starting a new generation.
func (c *Circuit) setState(s BreakerState, now time.Time) {
	c.state = s
	c.generation++
	c.consecutive, c.probing, c.healthy = 0, 0, 0
	c.window.reset()
	c.until = time.Time{}
	if s == BreakerOpen {
		c.until = now.Add(c.cfg.OpenFor)
	}
}

// slidingCounts estimates the counts of the last span with two fixed
// buckets, weighting the previous one by how much of it still overlaps the
// window.
type slidingCounts struct {
	span      time.Duration
	start     time.Time // start of the current bucket
	cur, prev counts
	started   bool
}

type counts struct{ total, failures int }

func (s *slidingCounts) reset() {
	*s = slidingCounts{span: s.span}
}

// roll moves the buckets forward so that now falls in the current one.
func (s *slidingCounts) roll(now time.Time) {
	if !s.started {
		s.start, s.started = now, true
		return
	}
	elapsed := now.Sub(s.start)
	switch {
	case elapsed < s.span:
	case elapsed < 2*s.span:
		s.prev, s.cur = s.cur, counts{}
		s.start = s.start.Add(s.span)
	default:
		s.prev, s.cur = counts{}, counts{}
		s.start = now
	}
}

func (s *slidingCounts) add(now time.Time, failure bool) {
	s.roll(now)
	s.cur.total++
	if failure {
		s.cur.failures++
	}
}

// trips reports whether the window's failure ratio opens the circuit.
func (s *slidingCounts) trips(now time.Time, cfg BreakerConfig) bool {
	s.roll(now)
	weight := 1 - float64(now.Sub(s.start))/float64(s.span)
	total := float64(s.cur.total) + weight*float64(s.prev.total)
	failures := float64(s.cur.failures) + weight*float64(s.prev.failures)
	return total >= float64(cfg.MinRequests) && failures >= cfg.FailureRatio*total
}

// Circuits holds one Circuit per processor account. It is safe for
// concurrent use.
type Circuits struct {
	cfg BreakerConfig
	// created, when set, prepares each new circuit before it is shared (the fleet's
	// hooks). Called with mu held.
	created func(account string, c *Circuit)

	mu       sync.RWMutex
	accounts map[string]*Circuit
}

// NewCircuits returns an empty set of circuits sharing cfg, or a
// *ConfigError.
func NewCircuits(cfg BreakerConfig) (*Circuits, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &Circuits{cfg: cfg, accounts: make(map[string]*Circuit)}, nil
}

// For returns the circuit of a processor account, creating it closed on
// first use.
func (c *Circuits) For(account string) *Circuit {
	c.mu.RLock()
	b, ok := c.accounts[account]
	c.mu.RUnlock()
	if ok {
		return b
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if b, ok := c.accounts[account]; ok {
		return b
	}
	b = newCircuit(c.cfg)
	if c.created != nil {
		c.created(account, b)
	}
	c.accounts[account] = b
	return b
}

// States returns the state at now of every account's circuit.
func (c *Circuits) States(now time.Time) map[string]BreakerState {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make(map[string]BreakerState, len(c.accounts))
	for account, b := range c.accounts {
		out[account] = b.State(now)
	}
	return out
}
