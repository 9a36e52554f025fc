package retry

import "fmt"

// Status is the final status of a logical operation.
type Status string

// The final statuses. The values are stable and match the API's charge
// statuses.
const (
	// StatusSucceeded: the operation took effect.
	StatusSucceeded Status = "succeeded"
	// StatusDeclined: the processor refused it as a business answer.
	StatusDeclined Status = "declined"
	// StatusPending: the outcome is unknown. An attempt may have executed
	// and no later answer under the same key settled it; reconciliation
	// resolves it, never a second operation.
	StatusPending Status = "pending"
	// StatusFailed: no attempt can have taken effect (or the processor
	// rejected the request as invalid); Result.Code says why.
	StatusFailed Status = "failed"
)

// Code is the reason of a failed result. The values are stable and are the
// failure codes of the API.
type Code string

// The failure codes.
const (
	// CodeDeadlineExceeded: the deadline left no room for a useful attempt.
	CodeDeadlineExceeded Code = "deadline_exceeded"
	// CodeRetryBudgetExhausted: the shared retry budget refused a retry.
	CodeRetryBudgetExhausted Code = "retry_budget_exhausted"
	// CodeCircuitOpen: the processor account's breaker refused the attempt.
	CodeCircuitOpen Code = "circuit_open"
	// CodeMaxAttempts: the policy's attempt limit was reached.
	CodeMaxAttempts Code = "max_attempts"
	// CodeInvalidRequest: the processor rejected the request as invalid.
	CodeInvalidRequest Code = "invalid_request"
	// CodeCanceled: the caller cancelled the operation.
	CodeCanceled Code = "canceled"
	// CodeProcessorUnavailable: the processor asked to wait longer than the
	// policy's Retry-After cap allows.
	CodeProcessorUnavailable Code = "processor_unavailable"
)

// Retryable reports whether a failure with this code may succeed if the
// caller runs the same operation again later, under the same idempotency
// key. Only CodeInvalidRequest is not retryable.
func (c Code) Retryable() bool {
	return c != CodeInvalidRequest && c != ""
}

// Result is the precise result of a logical operation.
type Result struct {
	// Status is the final status.
	Status Status
	// Code is the failure code; set only when Status is StatusFailed.
	Code Code
	// Retryable reports, for a failed result, whether running the same
	// operation again later may succeed.
	Retryable bool
}

// String returns the status, or "failed:" followed by the code for a failed
// result (the retry-policy simulator's "result" field).
func (r Result) String() string {
	if r.Status == StatusFailed {
		return string(StatusFailed) + ":" + string(r.Code)
	}
	return string(r.Status)
}

// Err returns nil for a succeeded result and an error describing any other:
// ErrDeclined, ErrOutcomeUnknown, or a *FailedError. Match them with
// errors.Is and errors.As.
func (r Result) Err() error {
	switch r.Status {
	case StatusSucceeded:
		return nil
	case StatusDeclined:
		return ErrDeclined
	case StatusPending:
		return ErrOutcomeUnknown
	default:
		return &FailedError{Code: r.Code, Retryable: r.Retryable}
	}
}

// FailedError is the error form of a failed result.
type FailedError struct {
	// Code is the failure code.
	Code Code
	// Retryable reports whether running the operation again later, under
	// the same idempotency key, may succeed.
	Retryable bool
}

// Error returns a message naming the code and whether it is retryable.
func (e *FailedError) Error() string {
	if e.Retryable {
		return fmt.Sprintf("retry: failed: %s (retryable)", e.Code)
	}
	return fmt.Sprintf("retry: failed: %s", e.Code)
}

// StopReason says why the loop stopped. The values are stable.
type StopReason string

// The reasons the loop stops.
const (
	// StopSucceeded: an attempt succeeded.
	StopSucceeded StopReason = "succeeded"
	// StopDeclined: an attempt was declined.
	StopDeclined StopReason = "declined"
	// StopStoredResult: the processor replayed a stored answer (final).
	StopStoredResult StopReason = "stored_result"
	// StopUnknownFinal: the answer leaves the outcome unknown and no retry
	// can settle it (a 500 on a keyed write).
	StopUnknownFinal StopReason = "unknown_final"
	// StopNotReplaySafe: the request may have executed and the operation
	// has no idempotency key, so it is never repeated.
	StopNotReplaySafe StopReason = "not_replay_safe"
	// StopTerminal: the processor rejected the request as invalid.
	StopTerminal StopReason = "terminal"
	// StopDeadline: the deadline cannot fit the wait plus a useful attempt.
	StopDeadline StopReason = "deadline_exceeded"
	// StopRetryAfterTooLong: the processor's Retry-After exceeds the
	// policy's cap; the loop never retries earlier than it was asked to.
	StopRetryAfterTooLong StopReason = "retry_after_too_long"
	// StopBudget: the retry budget refused the retry.
	StopBudget StopReason = "retry_budget_exhausted"
	// StopCircuitOpen: the breaker refused the attempt.
	StopCircuitOpen StopReason = "circuit_open"
	// StopMaxAttempts: the last allowed attempt failed.
	StopMaxAttempts StopReason = "max_attempts"
	// StopCanceled: the operation was cancelled.
	StopCanceled StopReason = "canceled"
)

// failureCode maps a stop reason that may end in a failed result to its
// failure code; the empty code for reasons that never do.
func (s StopReason) failureCode() Code {
	switch s {
	case StopTerminal:
		return CodeInvalidRequest
	case StopDeadline:
		return CodeDeadlineExceeded
	case StopRetryAfterTooLong:
		return CodeProcessorUnavailable
	case StopBudget:
		return CodeRetryBudgetExhausted
	case StopCircuitOpen:
		return CodeCircuitOpen
	case StopMaxAttempts:
		return CodeMaxAttempts
	case StopCanceled:
		return CodeCanceled
	}
	return ""
}

// result maps a stop reason to the operation's result. uncertain reports
// whether any attempt may have executed: then every reason that does not
// settle the outcome gives StatusPending (uncertainty is sticky).
func (s StopReason) result(uncertain bool) Result {
	switch s {
	case StopSucceeded:
		return Result{Status: StatusSucceeded}
	case StopDeclined:
		return Result{Status: StatusDeclined}
	case StopStoredResult, StopUnknownFinal, StopNotReplaySafe:
		return Result{Status: StatusPending}
	}
	if uncertain {
		return Result{Status: StatusPending}
	}
	code := s.failureCode()
	return Result{Status: StatusFailed, Code: code, Retryable: code.Retryable()}
}
