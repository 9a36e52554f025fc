package retry

import (
	"math/rand/v2"
	"time"
)

// Backoff is capped exponential backoff with full jitter: before retry n
// (n = 0 for the first retry) the loop waits a uniform random delay, in whole
// milliseconds once the ceiling reaches one, in
// [0, min(Cap, Base·2^n)).
//
// The zero value, and any non-positive Base or Cap, gives no delay.
type Backoff struct {
	Base time.Duration
	Cap  time.Duration
}

// Ceiling returns min(Cap, Base·2^n), the exclusive upper bound of the delay
// before retry n. It is exact and overflow-safe for every n: never negative,
// never above Cap. A negative n counts as 0.
func (b Backoff) Ceiling(n int) time.Duration {
	if b.Base <= 0 || b.Cap <= 0 {
		return 0
	}
	if n < 0 {
		n = 0
	}
	// Base·2^n ≤ Cap exactly when Base ≤ Cap>>n, and then the shift cannot
	// overflow; otherwise the cap binds. Shifts of 63 or more bits of a
	// positive int64 give 0, so large n land on the cap without overflow.
	if n >= 63 || b.Base > b.Cap>>uint(n) {
		return b.Cap
	}
	return b.Base << uint(n)
}

// Delay returns a full-jitter delay before retry n: uniform in
// [0, Ceiling(n)), and 0 when the ceiling is 0. It draws from r, or from the
// goroutine-safe global source when r is nil; a *rand.Rand is not safe for
// concurrent use.
func (b Backoff) Delay(n int, r *rand.Rand) time.Duration {
	return jitter(b.Ceiling(n), r)
}

// jitter returns a uniform random duration in [0, ceiling), in whole milliseconds when the
// ceiling is at least one: a finer wait buys nothing, and whole milliseconds keep a
// timeline's figures exact (an attempt's start plus its latency and delay is the next
// one's start, its start plus its remaining time is the deadline).
func jitter(ceiling time.Duration, r *rand.Rand) time.Duration {
	if ceiling <= 0 {
		return 0
	}
	unit := time.Duration(1)
	if ceiling >= time.Millisecond {
		unit = time.Millisecond
	}
	n := int64(ceiling / unit)
	if r == nil {
		return time.Duration(rand.Int64N(n)) * unit
	}
	return time.Duration(r.Int64N(n)) * unit
}
