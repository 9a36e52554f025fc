package event

import (
	"math/rand/v2"
	"time"

	"github.com/paygate/paygate/retry"
)

// Schedule is how deliveries are retried: the retry package's capped full-jitter backoff
// between tries, a Retry-After from the endpoint when it asks for longer (up to
// RetryAfterCap), until Window has passed since the first try; then the delivery is a dead
// letter. An endpoint whose every delivery failed for DisableAfter is disabled.
type Schedule struct {
	Backoff       retry.Backoff
	RetryAfterCap time.Duration
	Window        time.Duration
	DisableAfter  time.Duration
	// Timeout bounds one try: an answer that takes longer is a failure.
	Timeout time.Duration
}

// DefaultSchedule is the delivery schedule: before retry n a uniform random wait below
// min(2 h, 30 s·2^n), for 3 days; 10 s per try.
func DefaultSchedule() Schedule {
	return Schedule{
		Backoff:       retry.Backoff{Base: 30 * time.Second, Cap: 2 * time.Hour},
		RetryAfterCap: 6 * time.Hour,
		Window:        72 * time.Hour,
		DisableAfter:  72 * time.Hour,
		Timeout:       10 * time.Second,
	}
}

// Retry is the plan after a failed try.
type Retry struct {
	// Dead: no try is left in the window; the delivery is a dead letter.
	Dead bool
	// Delay is the wait before the next try; Ceiling the backoff's bound on it (Delay can
	// exceed it when the endpoint's Retry-After asked for longer).
	Delay   time.Duration
	Ceiling time.Duration
}

// Next plans what follows the failed try number failures (1 for the first try) of a
// delivery whose first try was at start, at now: the backoff's full-jitter wait before
// retry failures-1, or the endpoint's Retry-After (retryAfter, 0 when none) when it is
// longer, capped; dead when the next try would fall after the window. r draws the jitter
// (nil: the global source).
func (s Schedule) Next(failures int, start, now time.Time, retryAfter time.Duration, r *rand.Rand) Retry {
	n := max(failures-1, 0)
	p := Retry{Ceiling: s.Backoff.Ceiling(n), Delay: s.Backoff.Delay(n, r)}
	if retryAfter > p.Delay {
		p.Delay = min(retryAfter, s.RetryAfterCap)
	}
	if now.Add(p.Delay).After(start.Add(s.Window)) {
		return Retry{Dead: true, Ceiling: p.Ceiling}
	}
	return p
}

// Delivered reports whether an answer with HTTP status status delivered the event: a 2xx.
func Delivered(status int) bool { return status >= 200 && status < 300 }
