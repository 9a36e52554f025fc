package policysim

import (
	"math/rand/v2"
	"time"
)

// This file holds the retry loops paygate's is compared with. They are
// models of other clients' behaviour, written for the comparison only: no
// deadline, no budget, no breaker, no Retry-After.

// stripeMaxNetworkRetries is stripe-go v76's DefaultMaxNetworkRetries.
const stripeMaxNetworkRetries = 2

// stripe-go v76's minNetworkRetriesDelay and maxNetworkRetriesDelay, and its
// default HTTP client timeout.
const (
	stripeMinDelay = 500 * time.Millisecond
	stripeMaxDelay = 5 * time.Second
	stripeTimeout  = 80 * time.Second
)

// stripeSleep is stripe-go v76's sleepTime before retry number retries
// (from 0): 500 ms·(1 + retries²), at most 5 s, less a random 0–25 %, never
// below 500 ms. The first retry always waits 500 ms, the second 750 ms to
// 1 s.
func stripeSleep(retries int, r *rand.Rand) time.Duration {
	delay := stripeMinDelay + stripeMinDelay*time.Duration(retries*retries)
	delay = min(delay, stripeMaxDelay)
	delay -= time.Duration(r.Int64N(int64(delay / 4)))
	return max(delay, stripeMinDelay)
}

// stripeShouldRetry is stripe-go v76's shouldRetry for an answer: every
// network error, Stripe-Should-Retry when present, 409, 429 lock_timeout,
// 5xx for a method other than POST, and 503.
func stripeShouldRetry(s Step, read bool) bool {
	switch {
	case !s.answered():
		return true
	case s.ShouldRetry != "":
		return s.ShouldRetry == "true"
	case s.Status == 409, s.Status == 429 && s.BodyCode == "lock_timeout":
		return true
	case s.Status >= 500 && read, s.Status == 503:
		return true
	}
	return false
}

// stripeLoop is stripe-go v76's default retry loop: at most
// MaxNetworkRetries (2) retries after its sleepTime.
type stripeLoop struct {
	read     bool
	jitter   *rand.Rand
	attempts int
	last     Step
	stopped  bool
}

func (l *stripeLoop) begin(time.Time) (int, time.Duration, bool) {
	l.attempts++
	return l.attempts, stripeTimeout, true
}

func (l *stripeLoop) next(_ time.Time, s Step) (time.Duration, bool) {
	l.last = s
	retries := l.attempts - 1
	if retries >= stripeMaxNetworkRetries || !stripeShouldRetry(s, l.read) {
		l.stopped = true
		return 0, false
	}
	return stripeSleep(retries, l.jitter), true
}

func (l *stripeLoop) cancel(time.Time) { l.stopped = true }

func (l *stripeLoop) done() bool { return l.stopped }

func (l *stripeLoop) outcome() opOutcome {
	return opOutcome{result: naiveResult(l.last), stop: "gave_up", attempts: l.attempts}
}

// naiveResult is the result a client without the gateway's classification
// reports from its last answer.
func naiveResult(s Step) string {
	switch {
	case s.answered() && s.Status >= 200 && s.Status < 300:
		return "succeeded"
	case s.answered() && s.Status == 402:
		return "declined"
	}
	return "failed:gave_up"
}

// nestedLayers and nestedTries shape the nested baseline: three layers, each
// trying what is below it three times.
const (
	nestedLayers = 3
	nestedTries  = 3
)

// nestedLoop is three nested retry layers of 3 tries each (the SDK, the
// service, its caller): each layer retries the whole layer below on any
// error that is not a 4xx, after a full-jitter wait of 500 ms·2^n (at most
// 5 s). The worst case is 3³ = 27 attempts per operation.
type nestedLoop struct {
	jitter   *rand.Rand
	tries    [nestedLayers]int // tries so far in each layer, innermost first
	attempts int
	last     Step
	stopped  bool
}

func (l *nestedLoop) begin(time.Time) (int, time.Duration, bool) {
	if l.attempts == 0 {
		for i := range l.tries {
			l.tries[i] = 1
		}
	}
	l.attempts++
	return l.attempts, stripeTimeout, true
}

func (l *nestedLoop) next(_ time.Time, s Step) (time.Duration, bool) {
	l.last = s
	if s.answered() && s.Status < 500 && s.Status != 429 && s.Status != 409 {
		l.stopped = true // a success, a decline or a client error: no layer retries
		return 0, false
	}
	for layer := range l.tries {
		if l.tries[layer] < nestedTries {
			n := l.tries[layer] - 1
			l.tries[layer]++
			for inner := range layer {
				l.tries[inner] = 1 // the layer below starts again
			}
			ceiling := min(stripeMinDelay<<n, stripeMaxDelay)
			return time.Duration(l.jitter.Int64N(int64(ceiling))), true
		}
	}
	l.stopped = true
	return 0, false
}

func (l *nestedLoop) cancel(time.Time) { l.stopped = true }

func (l *nestedLoop) done() bool { return l.stopped }

func (l *nestedLoop) outcome() opOutcome {
	return opOutcome{result: naiveResult(l.last), stop: "gave_up", attempts: l.attempts}
}
