package api

import (
	"net/http"
	"testing"
	"time"

	"github.com/paygate/paygate/charge"
)

func TestRetryAfterSeconds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		wait time.Duration
		want string
	}{
		{0, "1"},
		{-time.Second, "1"},
		{time.Millisecond, "1"},
		{time.Second, "1"},
		{1001 * time.Millisecond, "2"},
		{28100 * time.Millisecond, "29"},
		{30 * time.Second, "30"},
	} {
		if got := retryAfterSeconds(tc.wait); got != tc.want {
			t.Errorf("retryAfterSeconds(%v) = %q, want %q", tc.wait, got, tc.want)
		}
	}
}

// TestStatusOfFailures: a failure a retry can cure asks for one (503, or 504 for the
// deadline); one no retry can cure never does (422), whatever settled it.
func TestStatusOfFailures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code      string
		retryable bool
		want      int
	}{
		{"deadline_exceeded", true, http.StatusGatewayTimeout},
		{"max_attempts", true, http.StatusServiceUnavailable},
		{"circuit_open", true, http.StatusServiceUnavailable},
		{"processor_unavailable", true, http.StatusServiceUnavailable},
		{"invalid_request", false, http.StatusUnprocessableEntity},
		{"payment_intent_canceled", false, http.StatusUnprocessableEntity},
		{charge.CodeKeyExpired, false, http.StatusUnprocessableEntity},
		{charge.CodeAccountChanged, false, http.StatusUnprocessableEntity},
		{"resolved_failed_by_operator", false, http.StatusUnprocessableEntity},
		{"not_found_at_processor", false, http.StatusUnprocessableEntity},
	} {
		c := &charge.Charge{Status: charge.StatusFailed, Failure: &charge.Failure{Code: tc.code, Retryable: tc.retryable}}
		if got := StatusOf(c); got != tc.want {
			t.Errorf("StatusOf(failed %s, retryable %v) = %d, want %d", tc.code, tc.retryable, got, tc.want)
		}
	}
}
