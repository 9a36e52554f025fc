package retry

import (
	"errors"
	"fmt"
)

// Sentinel errors of the package. Match them with errors.Is.
var (
	// ErrDeclined is Result.Err for a declined operation.
	ErrDeclined = errors.New("retry: declined")

	// ErrOutcomeUnknown is Result.Err for a pending operation: an attempt
	// may have executed and no answer settled it.
	ErrOutcomeUnknown = errors.New("retry: outcome unknown")

	// ErrInvalidPolicy is wrapped by every *ConfigError.
	ErrInvalidPolicy = errors.New("retry: invalid policy")

	// ErrInvalidRetryAfter is wrapped by every error of ParseRetryAfter.
	ErrInvalidRetryAfter = errors.New("retry: invalid Retry-After")
)

// ConfigError reports an invalid Policy, BudgetConfig or BreakerConfig
// field. Field is named as in the retry-policy simulator's file (base_ms,
// budget.ratio, ...). It wraps ErrInvalidPolicy.
type ConfigError struct {
	Field   string
	Problem string
}

// Error returns "retry: invalid policy: FIELD PROBLEM".
func (e *ConfigError) Error() string {
	return fmt.Sprintf("%v: %s %s", ErrInvalidPolicy, e.Field, e.Problem)
}

// Unwrap returns ErrInvalidPolicy.
func (e *ConfigError) Unwrap() error { return ErrInvalidPolicy }
