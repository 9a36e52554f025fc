package policysim

import (
	"testing"

	"github.com/paygate/paygate/retry"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		step      Step
		read      bool
		wantClass retry.Class
		wantMaybe bool
	}{
		{"200", Step{Status: 200}, false, retry.ClassSuccess, false},
		{"201", Step{Status: 201}, false, retry.ClassSuccess, false},
		{"replayed 200", Step{Status: 200, Replayed: true}, false, retry.ClassSuccess, false},
		{"402", Step{Status: 402}, false, retry.ClassDecline, false},
		{"402 replayed", Step{Status: 402, Replayed: true}, false, retry.ClassDecline, false},
		{"decline code on 400", Step{Status: 400, BodyCode: "insufficient_funds"}, false, retry.ClassDecline, false},
		{"409 key in use", Step{Status: 409, BodyCode: "idempotency_key_in_use"}, false, retry.ClassBusy, true},
		{"409 lock_timeout", Step{Status: 409, BodyCode: "lock_timeout"}, false, retry.ClassBusy, true},
		{"409 should retry true", Step{Status: 409, ShouldRetry: "true"}, false, retry.ClassBusy, true},
		{"409 read", Step{Status: 409}, true, retry.ClassRetry, false},
		{"429 lock_timeout", Step{Status: 429, BodyCode: "lock_timeout"}, false, retry.ClassBusy, true},
		{"429 rate_limit", Step{Status: 429, BodyCode: "rate_limit"}, false, retry.ClassRetryAfter, false},
		{"429", Step{Status: 429}, false, retry.ClassRetryAfter, false},
		{"500 write", Step{Status: 500}, false, retry.ClassUnknownFinal, true},
		{"500 read", Step{Status: 500}, true, retry.ClassRetry, false},
		// Stripe's 424, a failed external dependency: an unknown outcome on a write, as a 500.
		{"424 write", Step{Status: 424}, false, retry.ClassUnknownFinal, true},
		{"424 read", Step{Status: 424}, true, retry.ClassRetry, false},
		{"replayed 424", Step{Status: 424, Replayed: true}, false, retry.ClassStoredResult, true},
		{"should retry false 424", Step{Status: 424, ShouldRetry: "false"}, false, retry.ClassUnknownFinal, true},
		{"502", Step{Status: 502}, false, retry.ClassRetry, true},
		{"503", Step{Status: 503}, false, retry.ClassRetry, false},
		{"504", Step{Status: 504}, false, retry.ClassRetry, true},
		{"replayed 500", Step{Status: 500, Replayed: true}, false, retry.ClassStoredResult, true},
		{"replayed 400", Step{Status: 400, Replayed: true}, false, retry.ClassTerminal, false},
		{"replayed 409", Step{Status: 409, Replayed: true}, false, retry.ClassStoredResult, true},
		{"should retry true 500", Step{Status: 500, ShouldRetry: "true"}, false, retry.ClassRetry, true},
		{"should retry true 503", Step{Status: 503, ShouldRetry: "true"}, false, retry.ClassRetry, false},
		{"should retry false 503", Step{Status: 503, ShouldRetry: "false"}, false, retry.ClassTerminal, true},
		{"should retry false 500", Step{Status: 500, ShouldRetry: "false"}, false, retry.ClassUnknownFinal, true},
		{"should retry false 409", Step{Status: 409, ShouldRetry: "false"}, false, retry.ClassTerminal, true},
		{"should retry true 400 idempotency_error", Step{Status: 400, BodyCode: "idempotency_error", ShouldRetry: "true"}, false, retry.ClassRetry, true},
		{"400 idempotency_error", Step{Status: 400, BodyCode: "idempotency_error"}, false, retry.ClassTerminal, true},
		{"400", Step{Status: 400, BodyCode: "parameter_missing"}, false, retry.ClassTerminal, false},
		{"404", Step{Status: 404}, false, retry.ClassTerminal, false},
		{"401 our key refused", Step{Status: 401}, false, retry.ClassRetry, false},
		{"403 should retry false", Step{Status: 403, ShouldRetry: "false"}, false, retry.ClassRetry, false},
		{"replayed 401", Step{Status: 401, Replayed: true}, false, retry.ClassTerminal, false},
		{"401 read", Step{Status: 401}, true, retry.ClassTerminal, false},
		{"409 without code", Step{Status: 409}, false, retry.ClassBusy, true},
		{"422 idempotency_error", Step{Status: 422, BodyCode: "idempotency_error"}, false, retry.ClassTerminal, true},
		{"422", Step{Status: 422}, false, retry.ClassTerminal, false},
		{"302 write", Step{Status: 302}, false, retry.ClassOutcomeUnknown, true},
		{"302 read", Step{Status: 302}, true, retry.ClassRetry, false},
		{"timeout write", Step{Timeout: true}, false, retry.ClassOutcomeUnknown, true},
		{"timeout read", Step{Timeout: true}, true, retry.ClassRetry, false},
		{"dropped write", Step{Dropped: true}, false, retry.ClassOutcomeUnknown, true},
		{"refused", Step{Refused: true}, false, retry.ClassNotSent, false},
		{"refused read", Step{Refused: true}, true, retry.ClassRetry, false},
		{"404 resource_missing read", Step{Status: 404, BodyCode: "resource_missing"}, true, retry.ClassSuccess, false},
		{"402 read", Step{Status: 402}, true, retry.ClassTerminal, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out := Classify(tt.step, tt.read)
			if out.Class != tt.wantClass {
				t.Errorf("class: got %s, want %s", out.Class, tt.wantClass)
			}
			if got := out.MaybeExecuted || out.Class.Executed(); got != tt.wantMaybe {
				t.Errorf("may have executed: got %v, want %v", got, tt.wantMaybe)
			}
			if tt.step.answered() && out.HTTPStatus != tt.step.Status {
				t.Errorf("HTTP status: got %d, want %d", out.HTTPStatus, tt.step.Status)
			}
		})
	}
}

func TestClassifyCarriesHeaders(t *testing.T) {
	t.Parallel()
	s := Step{Status: 429, RetryAfter: "30", Date: "Mon, 02 Mar 2026 12:00:00 GMT", BodyCode: "rate_limit"}
	out := Classify(s, false)
	if out.RetryAfter != s.RetryAfter || out.Date != s.Date || out.ProcessorCode != s.BodyCode {
		t.Errorf("outcome: got Retry-After %q, Date %q, code %q, want %q, %q, %q",
			out.RetryAfter, out.Date, out.ProcessorCode, s.RetryAfter, s.Date, s.BodyCode)
	}
	if got := Classify(Step{Status: 402}, false).ProcessorCode; got != "card_declined" {
		t.Errorf("402 without a code: got code %q, want card_declined", got)
	}
}

func TestPerform(t *testing.T) {
	t.Parallel()
	const timeout = 1000 * msec
	tests := []struct {
		name     string
		step     Step
		want     Step
		wantTook int64 // milliseconds
	}{
		{"fast answer", Step{Status: 200, Latency: 40 * msec}, Step{Status: 200, Latency: 40 * msec}, 40},
		{"answer at the timeout", Step{Status: 200, Latency: timeout}, Step{Status: 200, Latency: timeout}, 1000},
		{"slow answer times out", Step{Status: 200, Latency: 1500 * msec}, Step{Timeout: true}, 1000},
		{"timeout", Step{Timeout: true}, Step{Timeout: true}, 1000},
		{"slow drop times out", Step{Dropped: true, Latency: 2000 * msec}, Step{Timeout: true}, 1000},
		{"fast drop", Step{Dropped: true, Latency: 200 * msec}, Step{Dropped: true, Latency: 200 * msec}, 200},
		{"slow refusal stays unsent", Step{Refused: true, Latency: 3000 * msec}, Step{Refused: true, Latency: 3000 * msec}, 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, took := perform(tt.step, timeout)
			if got != tt.want {
				t.Errorf("answer: got %+v, want %+v", got, tt.want)
			}
			if took.Milliseconds() != tt.wantTook {
				t.Errorf("took: got %d ms, want %d ms", took.Milliseconds(), tt.wantTook)
			}
		})
	}
}
