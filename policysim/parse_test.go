package policysim

import (
	"context"
	"errors"
	"io"
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
		{"retry_after bool", withScript("", `[{"status": 429, "retry_after": true}]`), "script[0].retry_after: must be a header value (a string) or whole seconds"},
		{"retry_after negative", withScript("", `[{"status": 429, "retry_after": -3}]`), "script[0].retry_after: must be a header value (a string) or whole seconds"},
		{"long body code", withScript("", `[{"status": 400, "body_code": "`+strings.Repeat("x", 300)+`"}]`), "script[0].body_code: must be at most 256 bytes"},
		{"missing operations", `{"population": {"rate_per_sec": 10}}`, "population.operations: required"},
		{"zero operations", `{"population": {"operations": 0, "rate_per_sec": 10}}`, "population.operations: must be a positive integer"},
		{"zero rate", `{"population": {"operations": 10, "rate_per_sec": 0}}`, "population.rate_per_sec: must be a number above 0 up to 1000000"},
		{"slow arrivals", `{"population": {"operations": 1000000, "rate_per_sec": 0.001}}`, "population.rate_per_sec: too low: the arrivals would last more than 86400 s"},
		{"error rate above 1", `{"population": {"operations": 10, "rate_per_sec": 10, "error_rate": 1.5}}`, "population.error_rate: must be a number from 0 up to 1"},
		{"outage backwards", `{"population": {"operations": 10, "rate_per_sec": 10, "outage": {"from_ms": 500, "to_ms": 100}}}`, "population.outage.to_ms: must be greater than from_ms"},
		{"outage without end", `{"population": {"operations": 10, "rate_per_sec": 10, "outage": {"from_ms": 500}}}`, "population.outage.to_ms: required"},
		{"outage bad status", `{"population": {"operations": 10, "rate_per_sec": 10, "outage": {"to_ms": 100, "status": 0}}}`, "population.outage.status: must be an HTTP status from 200 to 599"},
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
