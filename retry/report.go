package retry

import (
	"encoding/json"
	"math"
	"time"
)

// Report is the account of one logical operation: every attempt, the
// decision taken after it, and why the loop stopped. Every retry decision can
// be explained from it alone.
type Report struct {
	// Result is the operation's result.
	Result Result
	// Stop is why the loop stopped.
	Stop StopReason
	// IdempotencyKey is the one key every attempt carried ("" for none).
	IdempotencyKey string
	// Start, Deadline and End are when the operation started, its absolute
	// deadline, and when the loop stopped.
	Start, Deadline, End time.Time
	// Uncertain reports whether any attempt may have executed at the
	// processor; it is why a result is pending rather than failed.
	Uncertain bool
	// Attempts holds one record per attempt sent, in order.
	Attempts []AttemptRecord
}

// Retries returns the number of attempts after the first.
func (r Report) Retries() int {
	return max(len(r.Attempts)-1, 0)
}

// AttemptRecord is one attempt and the decision that followed it. The first
// group of fields describes the attempt; BackoffCap, Backoff, Delay and the
// token counts describe the retry decision taken after it (zero, and equal
// token counts, when no retry was considered or the loop stopped before
// asking the budget).
type AttemptRecord struct {
	// N is the attempt's number, from 1.
	N int
	// StartedAt is when the attempt started.
	StartedAt time.Time
	// Duration is how long it took.
	Duration time.Duration
	// Timeout is the attempt's timeout: min(attempt timeout, remaining −
	// answer margin).
	Timeout time.Duration
	// Remaining is the time left before the deadline when it started.
	Remaining time.Duration
	// Class, HTTPStatus and ProcessorCode are the caller's classification.
	Class         Class
	HTTPStatus    int
	ProcessorCode string
	// MaybeExecuted reports whether the attempt may have taken effect.
	MaybeExecuted bool
	// RetryAfterHeader is the raw Retry-After value received (clipped to 64
	// bytes); RetryAfter its parsed wait when HasRetryAfter is true. A
	// non-empty header with HasRetryAfter false was invalid and ignored.
	RetryAfterHeader string
	RetryAfter       time.Duration
	HasRetryAfter    bool
	// BackoffCap is the backoff ceiling min(cap, base·2^n) for the retry
	// considered, and Backoff the full-jitter delay drawn below it.
	BackoffCap time.Duration
	Backoff    time.Duration
	// Delay is the earliest useful time for the next attempt, from the end
	// of this one: max(Backoff, RetryAfter, busy wait).
	Delay time.Duration
	// TokensBefore and TokensAfter are the retry budget's tokens around the
	// decision; equal when nothing was spent.
	TokensBefore, TokensAfter float64
}

// attemptJSON is the wire form of an AttemptRecord: the contract's
// attempts_detail fields, then the simulator's extra ones.
type attemptJSON struct {
	N                  int       `json:"n"`
	StartedAt          time.Time `json:"started_at"`
	DurationMs         int64     `json:"duration_ms"`
	TimeoutMs          int64     `json:"timeout_ms"`
	Class              Class     `json:"class"`
	HTTPStatus         *int      `json:"http_status"`
	ProcessorCode      *string   `json:"processor_code"`
	RetryAfterMs       *int64    `json:"retry_after_ms"`
	BackoffMs          int64     `json:"backoff_ms"`
	BudgetTokensBefore float64   `json:"budget_tokens_before"`
	BudgetTokensAfter  float64   `json:"budget_tokens_after"`
	BackoffCapMs       int64     `json:"backoff_cap_ms"`
	DelayMs            int64     `json:"delay_ms"`
	RemainingMs        int64     `json:"remaining_ms"`
	MaybeExecuted      bool      `json:"maybe_executed"`
	RetryAfterHeader   string    `json:"retry_after_header,omitempty"`
}

// MarshalJSON encodes the record with the contract's attempts_detail field
// names (n, started_at, duration_ms, timeout_ms, class, http_status,
// processor_code, retry_after_ms, backoff_ms, budget_tokens_before,
// budget_tokens_after), followed by backoff_cap_ms, delay_ms, remaining_ms,
// maybe_executed and retry_after_header. Durations are whole milliseconds,
// times UTC, absent values null, token counts rounded to 1/1000.
func (a AttemptRecord) MarshalJSON() ([]byte, error) {
	w := attemptJSON{
		N:                  a.N,
		StartedAt:          a.StartedAt.UTC(),
		DurationMs:         a.Duration.Milliseconds(),
		TimeoutMs:          a.Timeout.Milliseconds(),
		Class:              a.Class,
		BackoffMs:          a.Backoff.Milliseconds(),
		BudgetTokensBefore: roundTokens(a.TokensBefore),
		BudgetTokensAfter:  roundTokens(a.TokensAfter),
		BackoffCapMs:       a.BackoffCap.Milliseconds(),
		DelayMs:            a.Delay.Milliseconds(),
		RemainingMs:        a.Remaining.Milliseconds(),
		MaybeExecuted:      a.MaybeExecuted,
		RetryAfterHeader:   a.RetryAfterHeader,
	}
	if a.HTTPStatus != 0 {
		w.HTTPStatus = &a.HTTPStatus
	}
	if a.ProcessorCode != "" {
		w.ProcessorCode = &a.ProcessorCode
	}
	if a.HasRetryAfter {
		ms := a.RetryAfter.Milliseconds()
		w.RetryAfterMs = &ms
	}
	return json.Marshal(w)
}

// MarshalJSON encodes the report: result (as Result.String), status, code,
// retryable, stop_reason, idempotency_key, started_at, deadline, ended_at,
// uncertain and attempts.
func (r Report) MarshalJSON() ([]byte, error) {
	attempts := r.Attempts
	if attempts == nil {
		attempts = []AttemptRecord{}
	}
	return json.Marshal(struct {
		Result         string          `json:"result"`
		Status         Status          `json:"status"`
		Code           Code            `json:"code,omitempty"`
		Retryable      bool            `json:"retryable"`
		Stop           StopReason      `json:"stop_reason"`
		IdempotencyKey string          `json:"idempotency_key,omitempty"`
		Start          time.Time       `json:"started_at"`
		Deadline       time.Time       `json:"deadline"`
		End            time.Time       `json:"ended_at"`
		Uncertain      bool            `json:"uncertain"`
		Attempts       []AttemptRecord `json:"attempts"`
	}{
		Result:         r.Result.String(),
		Status:         r.Result.Status,
		Code:           r.Result.Code,
		Retryable:      r.Result.Retryable,
		Stop:           r.Stop,
		IdempotencyKey: r.IdempotencyKey,
		Start:          r.Start.UTC(),
		Deadline:       r.Deadline.UTC(),
		End:            r.End.UTC(),
		Uncertain:      r.Uncertain,
		Attempts:       attempts,
	})
}

func roundTokens(f float64) float64 {
	return math.Round(f*1000) / 1000
}
