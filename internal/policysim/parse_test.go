package policysim

import (
	"context"
	"errors"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/retry"
)

// script wraps a script array into a file with an optional extra top-level
// member (extra is "" or `"name": value,`).
func withScript(extra, steps string) string {
	return `{` + extra + ` "script": ` + steps + `}`
}

func TestParseDefaults(t *testing.T) {
	t.Parallel()
	f, err := Parse([]byte(withScript("", `[{"status": 200}]`)))
	if err != nil {
		t.Fatalf("Parse: got error %v, want nil", err)
	}
	if got, want := f.Policy, retry.DefaultPolicy(); got != want {
		t.Errorf("policy: got %+v, want the default %+v", got, want)
	}
	if f.Budget == nil || *f.Budget != retry.DefaultScopeBudget() {
		t.Errorf("budget: got %+v, want the default scope budget", f.Budget)
	}
	if f.Breaker == nil || *f.Breaker != retry.DefaultBreakerConfig() {
		t.Errorf("breaker: got %+v, want the default breaker", f.Breaker)
	}
	if got, want := f.Operation, (Operation{Method: "POST", IdempotencyKey: true}); got != want {
		t.Errorf("operation: got %+v, want %+v", got, want)
	}
	if f.Population != nil {
		t.Errorf("population: got %+v, want nil", f.Population)
	}
}

func TestParseContractExample(t *testing.T) {
	t.Parallel()
	// The example of the contract, verbatim.
	const file = `{
  "policy": {"base_ms": 500, "cap_ms": 5000, "max_attempts": 3, "attempt_timeout_ms": 4000,
             "deadline_ms": 8000, "min_attempt_ms": 300, "retry_after_cap_ms": 10000,
             "budget": {"ratio": 0.1, "min_per_sec": 1, "burst": 10}},
  "operation": {"method": "POST", "idempotency_key": true},
  "clock_skew_ms": 0,
  "script": [
    {"status": 503, "latency_ms": 40},
    {"status": 429, "retry_after": "30", "latency_ms": 10},
    {"status": 200, "latency_ms": 40}
  ]
}`
	f, err := Parse([]byte(file))
	if err != nil {
		t.Fatalf("Parse: got error %v, want nil", err)
	}
	if got, want := f.Policy.MaxAttempts, 3; got != want {
		t.Errorf("max_attempts: got %d, want %d", got, want)
	}
	if got, want := f.Budget.Ratio, 0.1; got != want {
		t.Errorf("budget.ratio: got %v, want %v", got, want)
	}
	want := []Step{
		{Status: 503, Latency: 40 * time.Millisecond},
		{Status: 429, RetryAfter: "30", Latency: 10 * time.Millisecond},
		{Status: 200, Latency: 40 * time.Millisecond},
	}
	if len(f.Script) != len(want) {
		t.Fatalf("script: got %d steps, want %d", len(f.Script), len(want))
	}
	for i := range want {
		if f.Script[i] != want[i] {
			t.Errorf("script[%d]: got %+v, want %+v", i, f.Script[i], want[i])
		}
	}
}

func TestParseNulls(t *testing.T) {
	t.Parallel()
	f, err := Parse([]byte(withScript(`"policy": {"budget": null, "breaker": null},`, `[{"status": 200}]`)))
	if err != nil {
		t.Fatalf("Parse: got error %v, want nil", err)
	}
	if f.Budget != nil || f.Breaker != nil {
		t.Errorf("budget, breaker: got %v, %v, want nil, nil", f.Budget, f.Breaker)
	}
}

func TestParseStep(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		step string
		want Step
	}{
		{"numeric retry_after", `{"status": 429, "retry_after": 30}`, Step{Status: 429, RetryAfter: "30"}},
		{"empty date", `{"status": 429, "date": ""}`, Step{Status: 429, HasDate: true}},
		{"should_retry", `{"status": 500, "should_retry": false}`, Step{Status: 500, ShouldRetry: "false"}},
		{"timeout", `{"timeout": true}`, Step{Timeout: true}},
		{"refused with latency", `{"refused": true, "latency_ms": 5}`, Step{Refused: true, Latency: 5 * time.Millisecond}},
		{"replayed code", `{"status": 500, "replayed": true, "body_code": "api_error"}`, Step{Status: 500, Replayed: true, BodyCode: "api_error"}},
		{"integral float", `{"status": 2e2}`, Step{Status: 200}},
		{"date retry_after", `{"status": 503, "retry_after": "Mon, 02 Mar 2026 12:00:33 GMT", "date": "Mon, 02 Mar 2026 12:00:30 GMT"}`,
			Step{Status: 503, RetryAfter: "Mon, 02 Mar 2026 12:00:33 GMT", Date: "Mon, 02 Mar 2026 12:00:30 GMT", HasDate: true}},
		{"date at the bound before the start", `{"status": 503, "date": "Mon, 02 Mar 2026 11:59:30 GMT"}`,
			Step{Status: 503, Date: "Mon, 02 Mar 2026 11:59:30 GMT", HasDate: true}},
		{"date at the bound after the deadline", `{"status": 503, "date": "Mon, 02 Mar 2026 12:00:38 GMT"}`,
			Step{Status: 503, Date: "Mon, 02 Mar 2026 12:00:38 GMT", HasDate: true}},
		{"obsolete date forms", `{"status": 503, "retry_after": " Mon Mar  2 12:00:05 2026 ", "date": "Monday, 02-Mar-26 12:00:01 GMT"}`,
			Step{Status: 503, RetryAfter: " Mon Mar  2 12:00:05 2026 ", Date: "Monday, 02-Mar-26 12:00:01 GMT", HasDate: true}},
		{"retry_after digits", `{"status": 429, "retry_after": "0030"}`, Step{Status: 429, RetryAfter: "0030"}},
		// A processor can send any header: the simulator shows what the loop does with it.
		{"retry_after words", `{"status": 429, "retry_after": "soon"}`, Step{Status: 429, RetryAfter: "soon"}},
		{"retry_after empty: no header", `{"status": 429, "retry_after": ""}`, Step{Status: 429}},
		{"retry_after signed", `{"status": 429, "retry_after": "+30"}`, Step{Status: 429, RetryAfter: "+30"}},
		{"retry_after fraction", `{"status": 429, "retry_after": "1.5"}`, Step{Status: 429, RetryAfter: "1.5"}},
		{"retry_after date without zone", `{"status": 503, "retry_after": "Mon, 02 Mar 2026 12:00:30"}`,
			Step{Status: 503, RetryAfter: "Mon, 02 Mar 2026 12:00:30"}},
		{"retry_after with a tab and obs-text", `{"status": 429, "retry_after": "3\t0 \u00e9"}`, Step{Status: 429, RetryAfter: "3\t0 \u00e9"}},
		{"date words", `{"status": 429, "date": "yesterday"}`, Step{Status: 429, Date: "yesterday", HasDate: true}},
		{"date seconds", `{"status": 429, "date": "30"}`, Step{Status: 429, Date: "30", HasDate: true}},
		{"date an hour ahead", `{"status": 429, "retry_after": "Mon, 02 Mar 2026 13:00:23 GMT", "date": "Mon, 02 Mar 2026 13:00:20 GMT"}`,
			Step{Status: 429, RetryAfter: "Mon, 02 Mar 2026 13:00:23 GMT", Date: "Mon, 02 Mar 2026 13:00:20 GMT", HasDate: true}},
		{"date a second before the start, no skew allowed", `{"status": 503, "date": "Mon, 02 Mar 2026 11:59:59 GMT"}`,
			Step{Status: 503, Date: "Mon, 02 Mar 2026 11:59:59 GMT", HasDate: true}},
		{"leap second", `{"status": 503, "retry_after": "Mon, 02 Mar 2026 23:59:60 GMT"}`, Step{Status: 503, RetryAfter: "Mon, 02 Mar 2026 23:59:60 GMT"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, err := Parse([]byte(withScript("", "["+tt.step+"]")))
			if err != nil {
				t.Fatalf("Parse: got error %v, want nil", err)
			}
			if got := f.Script[0]; got != tt.want {
				t.Errorf("step: got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseInvalid(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		file string
		want string // the error message
	}{
		{"zero base", withScript(`"policy": {"base_ms": 0},`, `[{"status": 200}]`), "policy.base_ms: must be a positive integer"},
		{"negative base", withScript(`"policy": {"base_ms": -5},`, `[{"status": 200}]`), "policy.base_ms: must be a positive integer"},
		{"fractional base", withScript(`"policy": {"base_ms": 1.5},`, `[{"status": 200}]`), "policy.base_ms: must be a positive integer"},
		{"string base", withScript(`"policy": {"base_ms": "500"},`, `[{"status": 200}]`), "policy.base_ms: must be a positive integer"},
		{"huge deadline", withScript(`"policy": {"deadline_ms": 1e30},`, `[{"status": 200}]`), "policy.deadline_ms: must be at most 86400000"},
		{"cap below base", withScript(`"policy": {"base_ms": 600, "cap_ms": 500},`, `[{"status": 200}]`), "policy.cap_ms: must not be below base_ms"},
		{"zero attempts", withScript(`"policy": {"max_attempts": 0},`, `[{"status": 200}]`), "policy.max_attempts: must be a positive integer"},
		{"too many attempts", withScript(`"policy": {"max_attempts": 1000},`, `[{"status": 200}]`), "policy.max_attempts: must be at most 100"},
		{"negative min attempt", withScript(`"policy": {"min_attempt_ms": -1},`, `[{"status": 200}]`), "policy.min_attempt_ms: must be a non-negative integer"},
		{"min attempt over timeout", withScript(`"policy": {"min_attempt_ms": 5000},`, `[{"status": 200}]`), "policy.min_attempt_ms: must not exceed attempt_timeout_ms"},
		{"unknown policy field", withScript(`"policy": {"base": 5},`, `[{"status": 200}]`), "policy.base: unknown field"},
		{"negative ratio", withScript(`"policy": {"budget": {"ratio": -0.1}},`, `[{"status": 200}]`), "policy.budget.ratio: must be a number from 0 up to 1000"},
		{"small burst", withScript(`"policy": {"budget": {"burst": 0.5}},`, `[{"status": 200}]`), "policy.budget.burst: must be a number from 1 up to 1000000000"},
		{"unknown budget field", withScript(`"policy": {"budget": {"rate": 1}},`, `[{"status": 200}]`), "policy.budget.rate: unknown field"},
		{"budget not object", withScript(`"policy": {"budget": 3},`, `[{"status": 200}]`), "policy.budget: must be an object"},
		{"zero breaker ratio", withScript(`"policy": {"breaker": {"failure_ratio": 0}},`, `[{"status": 200}]`), "policy.breaker.failure_ratio: must be a number above 0 up to 1"},
		{"zero probes", withScript(`"policy": {"breaker": {"probes": 0}},`, `[{"status": 200}]`), "policy.breaker.probes: must be a positive integer"},
		{"policy not object", withScript(`"policy": [],`, `[{"status": 200}]`), "policy: must be an object"},
		{"bad method", withScript(`"operation": {"method": "PUT"},`, `[{"status": 200}]`), "operation.method: must be GET, POST or DELETE"},
		{"key not bool", withScript(`"operation": {"idempotency_key": "yes"},`, `[{"status": 200}]`), "operation.idempotency_key: must be true or false"},
		{"zero cancel", withScript(`"operation": {"cancel_at_ms": 0},`, `[{"status": 200}]`), "operation.cancel_at_ms: must be a positive integer"},
		{"skew too large", withScript(`"clock_skew_ms": 100000000,`, `[{"status": 200}]`), "clock_skew_ms: must be at most 86400000"},
		{"unknown top field", withScript(`"polcy": {},`, `[{"status": 200}]`), "polcy: unknown field"},
		{"neither", `{"policy": {}}`, "script: required: give script (one operation) or population (many)"},
		{"both", `{"script": [{"status": 200}], "population": {"operations": 1, "rate_per_sec": 1}}`, "population: not allowed with script: give one of script and population"},
		{"empty script", withScript("", `[]`), "script: must be a non-empty array of steps"},
		{"script not array", withScript("", `{}`), "script: must be a non-empty array of steps"},
		{"step not object", withScript("", `[200]`), "script[0]: must be an object"},
		{"missing status", withScript("", `[{"status": 200}, {"latency_ms": 3}]`), "script[1].status: required (or timeout, refused or dropped)"},
		{"status too low", withScript("", `[{"status": 99}]`), "script[0].status: must be an HTTP status from 200 to 599"},
		{"status too high", withScript("", `[{"status": 600}]`), "script[0].status: must be at most 599"},
		{"status 1xx", withScript("", `[{"status": 101}]`), "script[0].status: must be an HTTP status from 200 to 599"},
		{"status string", withScript("", `[{"status": "503"}]`), "script[0].status: must be an HTTP status from 200 to 599"},
		{"negative latency", withScript("", `[{"status": 200, "latency_ms": -1}]`), "script[0].latency_ms: must be a non-negative integer"},
		{"unknown step field", withScript("", `[{"status": 200, "delay_ms": 5}]`), "script[0].delay_ms: unknown field"},
		{"timeout and refused", withScript("", `[{"timeout": true, "refused": true}]`), "script[0].refused: must not be combined with timeout"},
		{"status with timeout", withScript("", `[{"timeout": true, "status": 503}]`), "script[0].status: not allowed in a step without an answer (timeout)"},
		{"retry_after bool", withScript("", `[{"status": 429, "retry_after": true}]`), "script[0].retry_after: must be a string, the header's value"},
		{"retry_after negative", withScript("", `[{"status": 429, "retry_after": -3}]`),
			"script[0].retry_after: must be a string (the header's value, sent as it is) or a whole number of seconds"},
		{"retry_after fraction number", withScript("", `[{"status": 429, "retry_after": 1.5}]`),
			"script[0].retry_after: must be a string (the header's value, sent as it is) or a whole number of seconds"},
		{"retry_after line end", withScript("", `[{"status": 429, "retry_after": "30\r\nX-Evil: 1"}]`),
			"script[0].retry_after: must be a header value: no control characters (byte 2 is 0x0d)"},
		{"retry_after long", withScript("", `[{"status": 429, "retry_after": "`+strings.Repeat("9", 300)+`"}]`),
			"script[0].retry_after: must be at most 256 bytes"},
		{"date number", withScript("", `[{"status": 429, "date": 30}]`), "script[0].date: must be a string, the header's value"},
		{"date NUL", withScript("", `[{"status": 429, "date": "Mon\u0000"}]`), "script[0].date: must be a header value: no control characters (byte 3 is 0x00)"},
		{"date DEL", withScript("", `[{"status": 429, "date": "\u007f"}]`), "script[0].date: must be a header value: no control characters (byte 0 is 0x7f)"},
		{"long body code", withScript("", `[{"status": 400, "body_code": "`+strings.Repeat("x", 300)+`"}]`), "script[0].body_code: must be at most 256 bytes"},
		{"missing operations", `{"population": {"rate_per_sec": 10}}`, "population.operations: required"},
		{"zero operations", `{"population": {"operations": 0, "rate_per_sec": 10}}`, "population.operations: must be a positive integer"},
		{"zero rate", `{"population": {"operations": 10, "rate_per_sec": 0}}`, "population.rate_per_sec: must be a number above 0 up to 1000000"},
		{"slow arrivals", `{"population": {"operations": 1000000, "rate_per_sec": 0.001}}`, "population.rate_per_sec: too low: the arrivals would last more than 86400 s"},
		{"error rate above 1", `{"population": {"operations": 10, "rate_per_sec": 10, "error_rate": 1.5}}`, "population.error_rate: must be a number from 0 up to 1"},
		{"outage backwards", `{"population": {"operations": 10, "rate_per_sec": 10, "outage": {"from_ms": 500, "to_ms": 100}}}`, "population.outage.to_ms: must be greater than from_ms"},
		{"outage without end", `{"population": {"operations": 10, "rate_per_sec": 10, "outage": {"from_ms": 500}}}`, "population.outage.to_ms: required"},
		{"outage bad status", `{"population": {"operations": 10, "rate_per_sec": 10, "outage": {"to_ms": 100, "status": 0}}}`, "population.outage.status: must be an error status the loop retries: 429, or 500 to 599"},
		{"outage 200", `{"population": {"operations": 10, "rate_per_sec": 10, "outage": {"to_ms": 100, "status": 200}}}`, "population.outage.status: must be an error status the loop retries: 429, or 500 to 599; got 200"},
		{"outage 404", `{"population": {"operations": 10, "rate_per_sec": 10, "outage": {"to_ms": 100, "status": 404}}}`, "population.outage.status: must be an error status the loop retries: 429, or 500 to 599; got 404"},
		{"outage 402", `{"population": {"operations": 10, "rate_per_sec": 10, "outage": {"to_ms": 100, "status": 402}}}`, "population.outage.status: must be an error status the loop retries: 429, or 500 to 599; got 402"},
		{"outage 600", `{"population": {"operations": 10, "rate_per_sec": 10, "outage": {"to_ms": 100, "status": 600}}}`, "population.outage.status: must be at most 599"},
		{"unknown population field", `{"population": {"operations": 10, "rate_per_sec": 10, "ops": 3}}`, "population.ops: unknown field"},
		{"malformed", "{\n  \"script\": [\n    {\"status\": 200,}\n  ]\n}", "line 3, column 20: invalid character '}' looking for beginning of object key string"},
		{"truncated", `{"script": [`, "line 1, column 13: unexpected end of JSON input"},
		{"empty", ``, "line 1, column 1: unexpected end of JSON input"},
		{"not an object", "  [1, 2]", "line 1, column 3: the file must be a JSON object"},
		{"trailing data", `{"script": [{"status": 200}]} {}`, "line 1, column 31: invalid character '{' after top-level value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(tt.file))
			var fe *FileError
			if !errors.As(err, &fe) {
				t.Fatalf("Parse: got error %v, want a *FileError", err)
			}
			if got := err.Error(); got != tt.want {
				t.Errorf("error: got %q, want %q", got, tt.want)
			}
		})
	}
}

// namesFieldOrPosition matches a FileError message: a field path or a
// position, then the problem.
var namesFieldOrPosition = regexp.MustCompile(`^(?s)(([a-z0-9_]+(\[[0-9]+\])?\.)*([a-z0-9_]+(\[[0-9]+\])?|".*")|line [0-9]+, column [0-9]+): .+`)

func FuzzParse(f *testing.F) {
	seeds := []string{
		withScript("", `[{"status": 503, "latency_ms": 40}, {"status": 200}]`),
		withScript(`"policy": {"base_ms": 500, "budget": {"ratio": 0.1}, "breaker": null},`, `[{"timeout": true}]`),
		withScript(`"operation": {"method": "GET", "cancel_at_ms": 5}, "clock_skew_ms": -300,`, `[{"status": 429, "retry_after": "Mon, 02 Mar 2026 12:00:03 GMT", "date": ""}]`),
		`{"population": {"operations": 10, "rate_per_sec": 5, "outage": {"from_ms": 0, "to_ms": 100, "status": 502}, "error_rate": 0.5}}`,
		`{"script": [{"status": 1e400}]}`,
		withScript("", `[{"status": 429, "retry_after": "soon", "date": "yesterday"}]`),
		withScript("", `[{"status": 429, "retry_after": "Mon, 02 Mar 2026 13:00:23 GMT", "date": "Mon, 02 Mar 2026 13:00:20 GMT"}]`),
		withScript("", `[{"status": 503, "retry_after": "Mon Mar  2 12:00:05 2026", "date": "Monday, 02-Mar-26 12:00:01 GMT"}]`),
		withScript("", `[{"status": 409, "body_code": "lock_timeout", "should_retry": true, "replayed": false}]`),
		withScript("", `[{"status": 503, "retry_after": "Monday, 02-Mar-76 12:00:10 GMT", "date": "Monday, 02-Mar-76 12:00:00 GMT"}]`),
		withScript("", `[{"status": 503, "retry_after": "Mon, 02 Mar 2026 23:59:60 GMT", "date": "Mon Mar  2 23:59:60 2026"}]`),
		withScript("", `[{"status": 402, "body_code": "card_decline_rate_limit_exceeded"}, {"status": 424}]`),
		`{"population": {"operations": 10, "rate_per_sec": 10, "outage": {"from_ms": 0, "to_ms": 100, "status": 200}}}`,
		`{"script": [{"status": 200}], "description": "\ud800"}`,
		`[]`, `{`, `{"a":1}`, `null`, ``,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(data)
		if err != nil {
			var fe *FileError
			if !errors.As(err, &fe) {
				t.Fatalf("Parse: got error %T %v, want a *FileError", err, err)
			}
			if fe.Field == "" && (fe.Line < 1 || fe.Column < 1) {
				t.Fatalf("error %q: got no field and no position, want one", err)
			}
			if !namesFieldOrPosition.MatchString(err.Error()) {
				t.Fatalf("error %q: got a message without a field or position", err)
			}
			if fe.Field != "" && !strings.HasPrefix(err.Error(), fe.Field+": ") {
				t.Fatalf("error %q: got a message that does not start with its field %q", err, fe.Field)
			}
			return
		}
		if (file.Script == nil) == (file.Population == nil) {
			t.Fatalf("got script %v and population %v, want exactly one", file.Script, file.Population)
		}
		for i, s := range file.Script {
			// A header value a processor can send: no control characters but the tab.
			for _, v := range []string{s.RetryAfter, s.Date} {
				if strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }) {
					t.Fatalf("script[%d]: accepted the header value %q with a control character", i, v)
				}
			}
		}
		if p := file.Population; p != nil && p.Outage != nil && p.Outage.Status != 429 && p.Outage.Status < 500 {
			t.Fatalf("population.outage.status %d: accepted, want 429 or 5xx", p.Outage.Status)
		}
		if err := file.Policy.Validate(); err != nil {
			t.Fatalf("a parsed policy: got Validate error %v, want nil", err)
		}
		// Every valid file runs: a script, or a small population.
		if file.Population != nil && file.Population.Operations > 200 {
			return
		}
		out, err := Run(context.Background(), file, 1)
		if err != nil {
			t.Fatalf("Run: got error %v, want nil", err)
		}
		if err := out.WriteText(io.Discard); err != nil {
			t.Fatalf("WriteText: got error %v, want nil", err)
		}
		if err := out.WriteSVG(io.Discard); err != nil {
			t.Fatalf("WriteSVG: got error %v, want nil", err)
		}
	})
}

// FuzzHTTPDate: httpDate reads a Date header exactly as the retry loop does:
// what it accepts, retry.ParseRetryAfter accepts as an HTTP-date, at the
// same instant, and the reverse.
func FuzzHTTPDate(f *testing.F) {
	for _, s := range []string{
		"Mon, 02 Mar 2026 12:00:00 GMT", "Monday, 02-Mar-26 12:00:01 GMT", "Mon Mar  2 12:00:05 2026",
		" Mon, 02 Mar 2026 13:00:20 GMT\t", "Sunday, 06-Nov-94 08:49:37 GMT", "Tuesday, 02-Mar-77 12:00:00 GMT",
		"Monday, 02-Mar-76 12:00:00 GMT", "Monday, 02-Mar-76 12:00:01 GMT", "Mon, 02 Mar 2026 23:59:60 GMT",
		"yesterday", "30", "", "Mon, 02 Mar 2026 12:00:00 UTC", "Mon, 31 Feb 2026 12:00:00 GMT",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		at, ok := httpDate(s)
		trimmed := strings.Trim(s, " \t")
		if trimmed != "" && trimmed[0] >= '0' && trimmed[0] <= '9' {
			// The loop reads a leading digit as delta-seconds, never a date.
			if ok {
				t.Fatalf("httpDate(%q): got a date, want none for digits", s)
			}
			return
		}
		// Measured from long before: ParseRetryAfter answers the wait from
		// a Date header a day before the fake clock's start.
		dayBefore := origin.Add(-24 * time.Hour).Format(http.TimeFormat)
		wait, err := retry.ParseRetryAfter(s, dayBefore, origin, 24*time.Hour)
		if ok != (err == nil) {
			t.Fatalf("httpDate(%q): got ok %v, but the loop's parser says %v", s, ok, err)
		}
		// (Within a century: the wait saturates some 292 years ahead.)
		if ok && !at.Before(origin.Add(-24*time.Hour)) && at.Before(origin.AddDate(100, 0, 0)) {
			if want := origin.Add(-24 * time.Hour).Add(wait); !at.Equal(want) {
				t.Fatalf("httpDate(%q): got %v, want the loop's %v", s, at, want)
			}
		}
	})
}
