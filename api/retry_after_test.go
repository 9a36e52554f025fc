package api

import (
	"encoding/json"
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

// TestRenderChargeError: an answer about a charge whose status is an error carries the
// contract's error object beside the charge; a success or a pending charge carries none.
func TestRenderChargeError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		c        charge.Charge
		wantType string // "" for no error object
		wantCode string
	}{
		{"succeeded", charge.Charge{Status: charge.StatusSucceeded}, "", ""},
		{"pending", charge.Charge{Status: charge.StatusPending}, "", ""},
		{"declined", charge.Charge{Status: charge.StatusDeclined}, "card_error", "card_declined"},
		{"retryable failure", charge.Charge{Status: charge.StatusFailed, Failure: &charge.Failure{Code: "max_attempts", Retryable: true}},
			typeAPI, "max_attempts"},
		{"deadline", charge.Charge{Status: charge.StatusFailed, Failure: &charge.Failure{Code: "deadline_exceeded", Retryable: true}},
			typeAPI, "deadline_exceeded"},
		{"invalid request", charge.Charge{Status: charge.StatusFailed, Failure: &charge.Failure{Code: "invalid_request"}},
			typeInvalidRequest, "invalid_request"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resp := RenderCharge(&tc.c)
			var body struct {
				Status string         `json:"status"`
				Error  map[string]any `json:"error"`
			}
			if err := json.Unmarshal(resp.Body, &body); err != nil {
				t.Fatalf("body: got error %v", err)
			}
			if body.Status != string(tc.c.Status) {
				t.Errorf("status: got %q, want %q", body.Status, tc.c.Status)
			}
			if tc.wantType == "" {
				if body.Error != nil {
					t.Errorf("error: got %v, want none", body.Error)
				}
				return
			}
			if body.Error["type"] != tc.wantType || body.Error["code"] != tc.wantCode || body.Error["message"] == "" {
				t.Errorf("error: got %v, want type %q code %q and a message", body.Error, tc.wantType, tc.wantCode)
			}
			if p, ok := body.Error["param"]; !ok || p != "" {
				t.Errorf("error param: got %v (present %v), want \"\"", p, ok)
			}
		})
	}
}

// TestRequestTimeout: Request-Timeout-Ms is an integer from 1 to 60000; anything else, a
// value too large to hold as a duration included, is refused.
func TestRequestTimeout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		header string
		want   time.Duration // 0: refused
	}{
		{"", defaultRequestTimeout},
		{"1", time.Millisecond},
		{"60000", 60 * time.Second},
		{"60001", 0},
		{"0", 0},
		{"-5", 0},
		{"1.5", 0},
		{"10000000000000", 0},   // overflows a duration in nanoseconds
		{"4000056655665556", 0}, // likewise
		{"99999999999999999999", 0},
	} {
		got, err := requestTimeout(tc.header)
		switch {
		case tc.want == 0 && (err == nil || err.Code != "request_timeout_invalid"):
			t.Errorf("requestTimeout(%q) = %v, %v; want request_timeout_invalid", tc.header, got, err)
		case tc.want != 0 && (err != nil || got != tc.want):
			t.Errorf("requestTimeout(%q) = %v, %v; want %v", tc.header, got, err, tc.want)
		}
	}
}
