package policysim

import (
	"time"

	"github.com/paygate/paygate/retry"
)

// File is a parsed, valid simulation file. Parse builds it; fields the file
// leaves out hold the gateway's defaults.
type File struct {
	// Description is the file's free-text description, printed above the
	// text output.
	Description string

	// Policy is the retry policy under test [policy]. Fields the file leaves
	// out are retry.DefaultPolicy's.
	Policy retry.Policy

	// Budget is the retry budget shared by every operation [policy.budget];
	// nil when the file sets it to null (no budget). Default:
	// retry.DefaultScopeBudget.
	Budget *retry.BudgetConfig

	// Breaker configures the circuit breaker shared by every operation
	// [policy.breaker]; nil when the file sets it to null (no breaker).
	// Default: retry.DefaultBreakerConfig.
	Breaker *retry.BreakerConfig

	// Operation describes the logical operation [operation].
	Operation Operation

	// ClockSkew is how far the processor's clock is ahead of the gateway's
	// (negative: behind) [clock_skew_ms]. It moves the Date header of every
	// answer, which corrects an HTTP-date Retry-After.
	ClockSkew time.Duration

	// Script holds the processor's answers to a single operation's
	// attempts, in order [script]. Exactly one of Script and Population is
	// set.
	Script []Step

	// Population describes many operations sharing one budget and one
	// breaker [population].
	Population *Population
}

// Operation describes the logical operation being retried.
type Operation struct {
	// Method is the HTTP method: GET (a read, idempotent), POST or DELETE
	// [method]. Default POST.
	Method string

	// IdempotencyKey reports whether a write carries a processor
	// idempotency key [idempotency_key]. Without one, a write that may have
	// been sent is never repeated. Default true.
	IdempotencyKey bool

	// CancelAt, when positive, is when the caller gives up, from the
	// operation's start [cancel_at_ms]: the operation is cancelled then, as
	// when its context ends.
	CancelAt time.Duration
}

// Read reports whether the operation is a read, which is idempotent and so
// replay-safe without a key.
func (o Operation) Read() bool { return o.Method == "GET" }

// Step is the processor's answer to one attempt.
type Step struct {
	// Status is the HTTP status of the answer [status]; 0 for a step
	// without an answer (Timeout, Refused or Dropped).
	Status int

	// Latency is how long the answer takes [latency_ms]. An answer slower
	// than the attempt's timeout is a timeout.
	Latency time.Duration

	// RetryAfter is the raw Retry-After header [retry_after], as a processor
	// may send it: delta-seconds, an HTTP-date or any other text without
	// control characters, which the loop ignores; "" for none.
	RetryAfter string

	// Date is the raw Date header [date], as a processor may send it: the
	// loop corrects at most the policy's MaxClockSkew from an HTTP-date and
	// ignores anything else. When HasDate is false the answer carries the
	// processor's clock (the fake clock plus ClockSkew) as an IMF-fixdate; a
	// date set to "" sends no Date header.
	Date    string
	HasDate bool

	// Timeout: the request was sent and no answer came within the attempt's
	// timeout [timeout]. The attempt takes its whole timeout.
	Timeout bool

	// Refused: the connection failed before the request was sent [refused].
	Refused bool

	// Dropped: the request was sent and the connection closed after
	// Latency without an answer [dropped].
	Dropped bool

	// BodyCode is the error code of the answer's body [body_code]: a Stripe
	// error code (lock_timeout, idempotency_key_in_use, idempotency_error,
	// ...) or a decline code (card_declined, insufficient_funds, ...).
	BodyCode string

	// Replayed reports an Idempotent-Replayed: true header [replayed]: the
	// processor replayed the answer it stored for the key.
	Replayed bool

	// ShouldRetry is the Stripe-Should-Retry header [should_retry]: "true",
	// "false", or "" for none. It overrides the status code.
	ShouldRetry string
}

// answered reports whether the step carries an HTTP answer.
func (s Step) answered() bool {
	return !s.Timeout && !s.Refused && !s.Dropped
}

// Population describes many operations arriving at a steady rate and sharing
// one budget and one breaker.
type Population struct {
	// Operations is how many operations arrive [operations].
	Operations int

	// RatePerSec is how many operations arrive per second, evenly spaced
	// [rate_per_sec].
	RatePerSec float64

	// Outage, if set, is a window in which every attempt is answered with
	// its status [outage].
	Outage *Outage

	// ErrorRate is the share of attempts outside the outage answered with
	// an error status, drawn at random [error_rate]: the outage's status
	// when there is an outage, else 503.
	ErrorRate float64

	// Latency is how long every answer takes [latency_ms]. Default 40 ms.
	Latency time.Duration
}

// Outage is a window of the simulation, from the population's start, in
// which every attempt that starts is answered with Status.
type Outage struct {
	// From and To bound the window: From ≤ start < To [from_ms, to_ms].
	From, To time.Duration
	// Status is the answer's HTTP status [status]: 429 or 500 to 599, an
	// error the loop retries. Default 503.
	Status int
}

// errorStatus is the status of a random error answer.
func (p *Population) errorStatus() int {
	if p.Outage != nil {
		return p.Outage.Status
	}
	return 503
}

// interval is the time between two arrivals.
func (p *Population) interval() time.Duration {
	return time.Duration(float64(time.Second) / p.RatePerSec)
}
