package retry

import "time"

// Policy is the timing and attempt policy of one kind of job. Each field
// maps onto the retry-policy simulator's policy object, named in brackets.
//
// A Policy is a plain value: copy it, tune it per merchant or job type, and
// check it with Validate (NewRun and Do call it).
type Policy struct {
	// Deadline bounds the whole operation, waits included, from its start
	// [deadline_ms]. A context deadline or Operation.Deadline that is
	// earlier wins.
	Deadline time.Duration

	// AttemptTimeout bounds one attempt [attempt_timeout_ms]. The effective
	// timeout is min(AttemptTimeout, remaining − AnswerMargin).
	AttemptTimeout time.Duration

	// Base and Cap shape the capped exponential backoff with full jitter
	// [base_ms, cap_ms]: retry n waits up to min(Cap, Base·2^n).
	Base time.Duration
	Cap  time.Duration

	// MaxAttempts is the limit of attempts, the first one included
	// [max_attempts].
	MaxAttempts int

	// RetryAfterCap is the longest Retry-After this job accepts
	// [retry_after_cap_ms]. A longer one stops the loop with
	// StopRetryAfterTooLong instead of retrying earlier than the processor
	// asked.
	RetryAfterCap time.Duration

	// MinAttempt is the shortest attempt timeout worth sending
	// [min_attempt_ms]: the loop waits only when the deadline still fits
	// the wait, AnswerMargin and MinAttempt.
	MinAttempt time.Duration

	// AnswerMargin is kept free at the end of the deadline to answer the
	// caller [answer_margin_ms].
	AnswerMargin time.Duration

	// BusyWait is the shortest wait after ClassBusy (the key is in use by a
	// concurrent request) [busy_wait_ms].
	BusyWait time.Duration

	// MaxClockSkew bounds the correction applied to an HTTP-date
	// Retry-After from the response's Date header [max_clock_skew_ms].
	MaxClockSkew time.Duration
}

// DefaultPolicy returns the defaults for interactive charges: deadline 8 s,
// attempt timeout 4 s, backoff base 500 ms and cap 5 s, at most 4 attempts,
// Retry-After cap 10 s, minimum useful attempt 300 ms, answer margin 100 ms,
// busy wait 250 ms, clock skew bound 30 s.
func DefaultPolicy() Policy {
	return Policy{
		Deadline:       8 * time.Second,
		AttemptTimeout: 4 * time.Second,
		Base:           500 * time.Millisecond,
		Cap:            5 * time.Second,
		MaxAttempts:    4,
		RetryAfterCap:  10 * time.Second,
		MinAttempt:     300 * time.Millisecond,
		AnswerMargin:   100 * time.Millisecond,
		BusyWait:       250 * time.Millisecond,
		MaxClockSkew:   30 * time.Second,
	}
}

// Backoff returns the policy's backoff.
func (p Policy) Backoff() Backoff {
	return Backoff{Base: p.Base, Cap: p.Cap}
}

// Validate returns a *ConfigError naming the first invalid field, or nil.
func (p Policy) Validate() error {
	positive := []struct {
		field string
		v     time.Duration
	}{
		{"deadline_ms", p.Deadline},
		{"attempt_timeout_ms", p.AttemptTimeout},
		{"base_ms", p.Base},
		{"cap_ms", p.Cap},
	}
	for _, f := range positive {
		if f.v <= 0 {
			return &ConfigError{Field: f.field, Problem: "must be positive"}
		}
	}
	nonNegative := []struct {
		field string
		v     time.Duration
	}{
		{"retry_after_cap_ms", p.RetryAfterCap},
		{"min_attempt_ms", p.MinAttempt},
		{"answer_margin_ms", p.AnswerMargin},
		{"busy_wait_ms", p.BusyWait},
		{"max_clock_skew_ms", p.MaxClockSkew},
	}
	for _, f := range nonNegative {
		if f.v < 0 {
			return &ConfigError{Field: f.field, Problem: "must not be negative"}
		}
	}
	if p.MaxAttempts < 1 {
		return &ConfigError{Field: "max_attempts", Problem: "must be at least 1"}
	}
	if p.Cap < p.Base {
		return &ConfigError{Field: "cap_ms", Problem: "must not be below base_ms"}
	}
	if p.MinAttempt > p.AttemptTimeout {
		return &ConfigError{Field: "min_attempt_ms", Problem: "must not exceed attempt_timeout_ms"}
	}
	if addSat(p.MinAttempt, p.AnswerMargin) >= p.Deadline {
		return &ConfigError{Field: "deadline_ms", Problem: "must exceed min_attempt_ms plus answer_margin_ms"}
	}
	return nil
}
