package retry

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"
)

// keyed is a replay-safe write.
var keyed = Operation{IdempotencyKey: "pg_ch_test"}

func TestRunScenarios(t *testing.T) {
	t.Parallel()

	type want struct {
		result   string
		stop     StopReason
		attempts int
	}
	tests := []struct {
		name   string
		policy func(*Policy)
		op     Operation
		budget *BudgetConfig // nil: no budget
		script []step
		want   want
		check  func(t *testing.T, s scripted)
	}{
		{
			name:   "503, 503, 200: three attempts, rising caps, one key",
			op:     keyed,
			budget: &BudgetConfig{Ratio: 0.15, MinPerSec: 1, Burst: 10},
			script: []step{unavail503, unavail503, ok200},
			want:   want{"succeeded", StopSucceeded, 3},
			check: func(t *testing.T, s scripted) {
				t.Helper()
				a := s.report.Attempts
				for i, wantCap := range []time.Duration{ms(500), ms(1000)} {
					if a[i].BackoffCap != wantCap {
						t.Errorf("attempt %d backoff cap: got %v, want %v", i+1, a[i].BackoffCap, wantCap)
					}
					if a[i].Delay < 0 || a[i].Delay >= wantCap {
						t.Errorf("attempt %d delay: got %v, want in [0, %v)", i+1, a[i].Delay, wantCap)
					}
				}
				for _, at := range s.attempts {
					if at.IdempotencyKey != keyed.IdempotencyKey {
						t.Errorf("attempt %d key: got %q, want %q", at.N, at.IdempotencyKey, keyed.IdempotencyKey)
					}
				}
				if got, want := a[0].TokensBefore-a[0].TokensAfter, 1.0; got != want {
					t.Errorf("tokens spent for retry 1: got %v, want %v", got, want)
				}
				if a[2].TokensBefore != a[2].TokensAfter {
					t.Errorf("tokens around the success: got %v → %v, want equal", a[2].TokensBefore, a[2].TokensAfter)
				}
			},
		},
		{
			name:   "429 Retry-After 30 with 5 s left: no second attempt",
			op:     Operation{IdempotencyKey: "k", Deadline: t0.Add(5 * time.Second)},
			budget: &BudgetConfig{Ratio: 0.15, MinPerSec: 1, Burst: 10},
			script: []step{{class: ClassRetryAfter, status: 429, code: "rate_limit", retryAfter: "30", latency: ms(10)}},
			want:   want{"failed:deadline_exceeded", StopDeadline, 1},
			check: func(t *testing.T, s scripted) {
				t.Helper()
				a := s.report.Attempts[0]
				if !a.HasRetryAfter || a.RetryAfter != 30*time.Second {
					t.Errorf("retry after: got %v (valid %v), want 30s", a.RetryAfter, a.HasRetryAfter)
				}
				if a.Delay < 30*time.Second {
					t.Errorf("delay: got %v, want at least the processor's 30s", a.Delay)
				}
				if a.TokensBefore != a.TokensAfter {
					t.Errorf("tokens: got %v → %v, want no token spent on a retry that cannot fit", a.TokensBefore, a.TokensAfter)
				}
				if !s.report.Result.Retryable {
					t.Errorf("retryable: got false, want true")
				}
			},
		},
		{
			name:   "429 Retry-After within the deadline: waits at least that long",
			op:     keyed,
			script: []step{{class: ClassRetryAfter, status: 429, retryAfter: "2", latency: ms(10)}, ok200},
			want:   want{"succeeded", StopSucceeded, 2},
			check: func(t *testing.T, s scripted) {
				t.Helper()
				if got := s.attempts[1].Deadline.Add(-s.attempts[1].Timeout).Sub(t0); got < 2*time.Second+ms(10) {
					t.Errorf("second attempt at: got %v, want ≥ 2.01s", got)
				}
			},
		},
		{
			name:   "422: one attempt, no token spent",
			op:     keyed,
			budget: &BudgetConfig{Ratio: 0.15, MinPerSec: 1, Burst: 10},
			script: []step{invalid422},
			want:   want{"failed:invalid_request", StopTerminal, 1},
			check: func(t *testing.T, s scripted) {
				t.Helper()
				a := s.report.Attempts[0]
				if a.TokensBefore != 10 || a.TokensAfter != 10 {
					t.Errorf("tokens: got %v → %v, want 10 → 10", a.TokensBefore, a.TokensAfter)
				}
				if s.report.Result.Retryable {
					t.Errorf("retryable: got true, want false")
				}
			},
		},
		{
			name:   "timeout on a write without a key: stops, uncertain",
			op:     Operation{},
			script: []step{timedOut},
			want:   want{"pending", StopNotReplaySafe, 1},
			check: func(t *testing.T, s scripted) {
				t.Helper()
				if !s.report.Uncertain {
					t.Errorf("uncertain: got false, want true")
				}
			},
		},
		{
			name:   "refused write without a key: safe to retry",
			op:     Operation{},
			script: []step{refused, ok200},
			want:   want{"succeeded", StopSucceeded, 2},
		},
		{
			name:   "timeout on an idempotent read without a key: retried",
			op:     Operation{Idempotent: true},
			script: []step{timedOut, ok200},
			want:   want{"succeeded", StopSucceeded, 2},
		},
		{
			name:   "timeout after send, then the deadline: pending, not failed",
			op:     keyed,
			script: []step{timedOut, timedOut, timedOut},
			want:   want{"pending", StopDeadline, 2},
			check: func(t *testing.T, s scripted) {
				t.Helper()
				a := s.report.Attempts
				if a[0].Timeout != 4*time.Second {
					t.Errorf("attempt 1 timeout: got %v, want 4s", a[0].Timeout)
				}
				wantSecond := a[1].Remaining - ms(100)
				if a[1].Timeout != wantSecond {
					t.Errorf("attempt 2 timeout: got %v, want remaining − margin = %v", a[1].Timeout, wantSecond)
				}
				if end := s.report.End; end.After(s.report.Deadline) {
					t.Errorf("ended at %v, want by the deadline %v", end, s.report.Deadline)
				}
			},
		},
		{
			name:   "lost response, then success with the same key",
			op:     keyed,
			script: []step{lost, ok200},
			want:   want{"succeeded", StopSucceeded, 2},
			check: func(t *testing.T, s scripted) {
				t.Helper()
				if s.attempts[0].IdempotencyKey != s.attempts[1].IdempotencyKey {
					t.Errorf("keys: got %q then %q, want the same", s.attempts[0].IdempotencyKey, s.attempts[1].IdempotencyKey)
				}
				if !s.report.Uncertain {
					t.Errorf("uncertain: got false, want true (an attempt may have executed)")
				}
			},
		},
		{
			name:   "lost response, then a decline: settled",
			op:     keyed,
			script: []step{lost, decline402},
			want:   want{"declined", StopDeclined, 2},
		},
		{
			name:   "lost response, then a replayed stored 500: final",
			op:     keyed,
			script: []step{lost, {class: ClassStoredResult, status: 500, latency: ms(20)}, ok200},
			want:   want{"pending", StopStoredResult, 2},
		},
		{
			name:   "500 on a keyed write: unknown, not retried",
			op:     keyed,
			script: []step{{class: ClassUnknownFinal, status: 500, latency: ms(50)}, ok200},
			want:   want{"pending", StopUnknownFinal, 1},
		},
		{
			name:   "lost response, then 400: terminal but pending",
			op:     keyed,
			script: []step{lost, {class: ClassTerminal, status: 400, code: "idempotency_error", latency: ms(20)}},
			want:   want{"pending", StopTerminal, 2},
		},
		{
			name:   "409 key in use: waits at least the busy wait",
			op:     keyed,
			policy: func(p *Policy) { p.BusyWait = 2 * time.Second },
			script: []step{{class: ClassBusy, status: 409, code: "idempotency_key_in_use", latency: ms(10)}, ok200},
			want:   want{"succeeded", StopSucceeded, 2},
			check: func(t *testing.T, s scripted) {
				t.Helper()
				if d := s.report.Attempts[0].Delay; d < 2*time.Second {
					t.Errorf("delay: got %v, want ≥ 2s", d)
				}
			},
		},
		{
			name:   "four 503s: max attempts, no wait after the last",
			op:     keyed,
			policy: func(p *Policy) { p.Deadline = time.Minute },
			script: []step{unavail503, unavail503, unavail503, unavail503},
			want:   want{"failed:max_attempts", StopMaxAttempts, 4},
			check: func(t *testing.T, s scripted) {
				t.Helper()
				last := s.report.Attempts[3]
				if last.Delay != 0 || last.BackoffCap != 0 {
					t.Errorf("last attempt: got delay %v cap %v, want none", last.Delay, last.BackoffCap)
				}
			},
		},
		{
			name:   "Retry-After above the cap on a long job: stops rather than retry early",
			op:     keyed,
			policy: func(p *Policy) { p.Deadline = time.Hour },
			script: []step{{class: ClassRetryAfter, status: 429, retryAfter: "60", latency: ms(10)}},
			want:   want{"failed:processor_unavailable", StopRetryAfterTooLong, 1},
		},
		{
			name:   "invalid Retry-After: falls back to backoff",
			op:     keyed,
			script: []step{{class: ClassRetryAfter, status: 429, retryAfter: "soon", latency: ms(10)}, ok200},
			want:   want{"succeeded", StopSucceeded, 2},
			check: func(t *testing.T, s scripted) {
				t.Helper()
				a := s.report.Attempts[0]
				if a.HasRetryAfter || a.RetryAfterHeader != "soon" {
					t.Errorf("retry after: got valid=%v header=%q, want invalid, header kept", a.HasRetryAfter, a.RetryAfterHeader)
				}
				if a.Delay >= a.BackoffCap {
					t.Errorf("delay: got %v, want below the backoff cap %v", a.Delay, a.BackoffCap)
				}
			},
		},
		{
			name:   "deadline too short for any attempt: nothing sent",
			op:     Operation{IdempotencyKey: "k", Deadline: t0.Add(ms(350))},
			script: []step{ok200},
			want:   want{"failed:deadline_exceeded", StopDeadline, 0},
		},
		{
			name:   "invalid class: treated as unknown and final",
			op:     keyed,
			script: []step{{class: "teapot", status: 418, latency: ms(10)}, ok200},
			want:   want{"pending", StopUnknownFinal, 1},
		},
		{
			name:   "a decline is final",
			op:     keyed,
			script: []step{decline402, ok200},
			want:   want{"declined", StopDeclined, 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := DefaultPolicy()
			if tt.policy != nil {
				tt.policy(&p)
			}
			op := tt.op
			if tt.budget != nil {
				op.Budget = newScope(t, *tt.budget)
			}
			s := runScript(t, p, op, tt.script...)
			if got := s.report.Result.String(); got != tt.want.result {
				t.Errorf("result: got %s, want %s", got, tt.want.result)
			}
			if s.report.Stop != tt.want.stop {
				t.Errorf("stop reason: got %s, want %s", s.report.Stop, tt.want.stop)
			}
			if got := len(s.report.Attempts); got != tt.want.attempts {
				t.Errorf("attempts: got %d, want %d", got, tt.want.attempts)
			}
			if s.sent != len(s.report.Attempts) {
				t.Errorf("requests sent: got %d, want %d (one per recorded attempt)", s.sent, len(s.report.Attempts))
			}
			if tt.check != nil {
				tt.check(t, s)
			}
		})
	}
}

// TestRunStickyUncertainty checks that once an attempt may have executed,
// every way of stopping gives pending, while the same stop without that
// doubt gives failed.
func TestRunStickyUncertainty(t *testing.T) {
	t.Parallel()

	stops := []struct {
		name  string
		setup func(t *testing.T, p *Policy, op *Operation)
		want  StopReason
		code  Code
	}{
		{
			name: "budget",
			setup: func(t *testing.T, _ *Policy, op *Operation) {
				b := newScope(t, BudgetConfig{Ratio: 0.15, Burst: 1})
				drain(b, t0)
				op.Budget = b
			},
			want: StopBudget, code: CodeRetryBudgetExhausted,
		},
		{
			name: "max attempts",
			setup: func(_ *testing.T, p *Policy, _ *Operation) {
				p.MaxAttempts = 1
			},
			want: StopMaxAttempts, code: CodeMaxAttempts,
		},
		{
			name: "deadline",
			setup: func(_ *testing.T, _ *Policy, op *Operation) {
				op.Deadline = t0.Add(ms(400))
			},
			want: StopDeadline, code: CodeDeadlineExceeded,
		},
	}
	firsts := []struct {
		name    string
		first   step
		pending bool
	}{
		{"refused before sending", refused, false},
		{"503 before execution", unavail503, false},
		{"lost response", lost, true},
		{"504 that may have executed", step{class: ClassRetry, status: 504, maybe: true, latency: ms(100)}, true},
	}
	for _, st := range stops {
		for _, f := range firsts {
			t.Run(st.name+"/"+f.name, func(t *testing.T) {
				t.Parallel()
				p := DefaultPolicy()
				op := keyed
				st.setup(t, &p, &op)
				s := runScript(t, p, op, f.first, ok200)
				want := Result{Status: StatusFailed, Code: st.code, Retryable: true}
				if f.pending {
					want = Result{Status: StatusPending}
				}
				if s.report.Result != want {
					t.Errorf("result: got %+v, want %+v", s.report.Result, want)
				}
				if s.report.Stop != st.want {
					t.Errorf("stop reason: got %s, want %s", s.report.Stop, st.want)
				}
			})
		}
	}
}

func TestRunBudgetEmptyAfterNotSent(t *testing.T) {
	t.Parallel()
	b := newScope(t, BudgetConfig{Ratio: 0.15, MinPerSec: 1, Burst: 2})
	drain(b, t0)
	s := runScript(t, DefaultPolicy(), Operation{IdempotencyKey: "k", Budget: b}, refused, ok200)
	if got, want := s.report.Result.String(), "failed:retry_budget_exhausted"; got != want {
		t.Errorf("result: got %s, want %s", got, want)
	}
	if !s.report.Result.Retryable {
		t.Errorf("retryable: got false, want true")
	}
	if got := len(s.report.Attempts); got != 1 {
		t.Errorf("attempts: got %d, want 1", got)
	}
	if a := s.report.Attempts[0]; a.TokensBefore >= 1 || a.TokensAfter != a.TokensBefore {
		t.Errorf("tokens: got %v → %v, want below 1 and unchanged", a.TokensBefore, a.TokensAfter)
	}
}

func TestRunBreakerOpenBeforeFirstSend(t *testing.T) {
	t.Parallel()
	c := newCircuitT(t, DefaultBreakerConfig())
	for range DefaultBreakerConfig().ConsecutiveFailures {
		tk, _ := c.Allow(t0)
		c.Done(t0, tk, HealthFailure)
	}
	s := runScript(t, DefaultPolicy(), Operation{IdempotencyKey: "k", Breaker: c}, ok200)
	if got, want := s.report.Result.String(), "failed:circuit_open"; got != want {
		t.Errorf("result: got %s, want %s", got, want)
	}
	if s.sent != 0 {
		t.Errorf("requests sent: got %d, want 0", s.sent)
	}
}

func TestRunBreakerOpensDuringRun(t *testing.T) {
	t.Parallel()
	cfg := DefaultBreakerConfig()
	cfg.ConsecutiveFailures = 1
	c := newCircuitT(t, cfg)
	s := runScript(t, DefaultPolicy(), Operation{IdempotencyKey: "k", Breaker: c}, lost, ok200)
	if got, want := s.report.Result.String(), "pending"; got != want {
		t.Errorf("result: got %s, want %s (the lost attempt may have executed)", got, want)
	}
	if s.report.Stop != StopCircuitOpen {
		t.Errorf("stop reason: got %s, want %s", s.report.Stop, StopCircuitOpen)
	}
}

func TestRunCancel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		first step
		at    time.Duration // when Cancel is called, from t0
		want  string
	}{
		{"during backoff after a 503", unavail503, ms(60), "failed:canceled"},
		{"during backoff after a lost response", lost, ms(250), "pending"},
		{"after the deadline", unavail503, 9 * time.Second, "failed:deadline_exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			run, err := NewRun(t0, DefaultPolicy(), keyed)
			if err != nil {
				t.Fatalf("NewRun: got error %v, want nil", err)
			}
			a, ok := run.Begin(t0)
			if !ok {
				t.Fatalf("Begin: got false, want true")
			}
			out, took := tt.first.respond(a)
			if d := run.Next(t0.Add(took), out); !d.Retry {
				t.Fatalf("Next: got stop %s, want a retry", d.Stop)
			}
			d := run.Cancel(t0.Add(tt.at))
			if got := d.Result.String(); got != tt.want {
				t.Errorf("result: got %s, want %s", got, tt.want)
			}
			if _, ok := run.Begin(t0.Add(tt.at)); ok {
				t.Errorf("Begin after Cancel: got an attempt, want none")
			}
		})
	}
}

func TestRunCanceledAttemptIsNotAProcessorFailure(t *testing.T) {
	t.Parallel()
	cfg := DefaultBreakerConfig()
	cfg.ConsecutiveFailures = 1
	c := newCircuitT(t, cfg)
	run, err := NewRun(t0, DefaultPolicy(), Operation{IdempotencyKey: "k", Breaker: c})
	if err != nil {
		t.Fatalf("NewRun: got error %v, want nil", err)
	}
	if _, ok := run.Begin(t0); !ok {
		t.Fatalf("Begin: got false, want true")
	}
	d := run.Next(t0.Add(ms(30)), Outcome{Class: ClassOutcomeUnknown, Canceled: true})
	if got, want := d.Result.String(), "pending"; got != want {
		t.Errorf("result: got %s, want %s", got, want)
	}
	if d.Stop != StopCanceled {
		t.Errorf("stop reason: got %s, want %s", d.Stop, StopCanceled)
	}
	if got := c.State(t0.Add(ms(30))); got != BreakerClosed {
		t.Errorf("breaker: got %s, want %s", got, BreakerClosed)
	}
}

func TestRunCanceledDoesNotOverrideAnAnswer(t *testing.T) {
	t.Parallel()
	run, err := NewRun(t0, DefaultPolicy(), keyed)
	if err != nil {
		t.Fatalf("NewRun: got error %v, want nil", err)
	}
	run.Begin(t0)
	d := run.Next(t0.Add(ms(30)), Outcome{Class: ClassSuccess, HTTPStatus: http.StatusOK, Canceled: true})
	if got, want := d.Result.String(), "succeeded"; got != want {
		t.Errorf("result: got %s, want %s", got, want)
	}
}

func TestRunMisusePanics(t *testing.T) {
	t.Parallel()
	mustPanic := func(t *testing.T, name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: got no panic, want one", name)
			}
		}()
		f()
	}
	run, err := NewRun(t0, DefaultPolicy(), keyed)
	if err != nil {
		t.Fatalf("NewRun: got error %v, want nil", err)
	}
	mustPanic(t, "Next before Begin", func() { run.Next(t0, Outcome{Class: ClassSuccess}) })
	run.Begin(t0)
	mustPanic(t, "Begin twice", func() { run.Begin(t0) })
}

func TestNewRunInvalidPolicy(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		edit  func(*Policy)
		field string
	}{
		{"zero base", func(p *Policy) { p.Base = 0 }, "base_ms"},
		{"cap below base", func(p *Policy) { p.Cap = p.Base - 1 }, "cap_ms"},
		{"no attempts", func(p *Policy) { p.MaxAttempts = 0 }, "max_attempts"},
		{"negative margin", func(p *Policy) { p.AnswerMargin = -1 }, "answer_margin_ms"},
		{"min attempt above timeout", func(p *Policy) { p.MinAttempt = 5 * time.Second }, "min_attempt_ms"},
		{"deadline too short", func(p *Policy) { p.Deadline = ms(400) }, "deadline_ms"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := DefaultPolicy()
			tt.edit(&p)
			_, err := NewRun(t0, p, keyed)
			if !errors.Is(err, ErrInvalidPolicy) {
				t.Fatalf("error: got %v, want one wrapping ErrInvalidPolicy", err)
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != tt.field {
				t.Errorf("field: got %v, want %s", err, tt.field)
			}
		})
	}
	if err := DefaultPolicy().Validate(); err != nil {
		t.Errorf("DefaultPolicy().Validate(): got %v, want nil", err)
	}
}

func TestResultErr(t *testing.T) {
	t.Parallel()
	if err := (Result{Status: StatusSucceeded}).Err(); err != nil {
		t.Errorf("succeeded: got %v, want nil", err)
	}
	if err := (Result{Status: StatusDeclined}).Err(); !errors.Is(err, ErrDeclined) {
		t.Errorf("declined: got %v, want ErrDeclined", err)
	}
	if err := (Result{Status: StatusPending}).Err(); !errors.Is(err, ErrOutcomeUnknown) {
		t.Errorf("pending: got %v, want ErrOutcomeUnknown", err)
	}
	var fe *FailedError
	err := Result{Status: StatusFailed, Code: CodeCircuitOpen, Retryable: true}.Err()
	if !errors.As(err, &fe) || fe.Code != CodeCircuitOpen || !fe.Retryable {
		t.Errorf("failed: got %v, want a retryable *FailedError with code circuit_open", err)
	}
}

func TestRunCancelInFlight(t *testing.T) {
	t.Parallel()
	run, err := NewRun(t0, DefaultPolicy(), keyed)
	if err != nil {
		t.Fatalf("NewRun: got error %v, want nil", err)
	}
	run.Begin(t0)
	d := run.Cancel(t0.Add(ms(100)))
	if got, want := d.Result.String(), "pending"; got != want {
		t.Errorf("result: got %s, want %s (an abandoned attempt may have executed)", got, want)
	}
	if again := run.Cancel(t0.Add(ms(200))); again != d {
		t.Errorf("second Cancel: got %+v, want the first decision %+v", again, d)
	}
	if got := run.Deadline(); !got.Equal(t0.Add(8 * time.Second)) {
		t.Errorf("Deadline: got %v, want %v", got, t0.Add(8*time.Second))
	}
}

func TestReportJSON(t *testing.T) {
	t.Parallel()
	s := runScript(t, DefaultPolicy(), keyed, timedOut, ok200)
	b, err := json.Marshal(s.report)
	if err != nil {
		t.Fatalf("json.Marshal: got error %v, want nil", err)
	}
	var got struct {
		Result   string           `json:"result"`
		Stop     string           `json:"stop_reason"`
		Attempts []map[string]any `json:"attempts"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("json.Unmarshal(%s): got error %v, want nil", b, err)
	}
	if got.Result != "succeeded" || got.Stop != "succeeded" || len(got.Attempts) != 2 {
		t.Fatalf("report: got %s, want succeeded with 2 attempts", b)
	}
	first := got.Attempts[0]
	for _, key := range []string{"n", "started_at", "duration_ms", "timeout_ms", "class", "http_status", "processor_code",
		"retry_after_ms", "backoff_ms", "budget_tokens_before", "budget_tokens_after", "backoff_cap_ms", "delay_ms", "remaining_ms"} {
		if _, ok := first[key]; !ok {
			t.Errorf("attempt JSON: got %v, want key %q", first, key)
		}
	}
	if first["http_status"] != nil || first["retry_after_ms"] != nil {
		t.Errorf("attempt JSON for a timeout: got http_status %v, retry_after_ms %v, want null", first["http_status"], first["retry_after_ms"])
	}
	if first["timeout_ms"] != 4000.0 {
		t.Errorf("timeout_ms: got %v, want 4000", first["timeout_ms"])
	}
}

func TestErrorMessages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err  error
		want string
	}{
		{&ConfigError{Field: "base_ms", Problem: "must be positive"}, "retry: invalid policy: base_ms must be positive"},
		{&FailedError{Code: CodeDeadlineExceeded, Retryable: true}, "retry: failed: deadline_exceeded (retryable)"},
		{&FailedError{Code: CodeInvalidRequest}, "retry: failed: invalid_request"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error(): got %q, want %q", got, tt.want)
		}
	}
	for h, want := range map[Health]string{HealthOK: "ok", HealthFailure: "failure", HealthNeutral: "neutral"} {
		if got := h.String(); got != want {
			t.Errorf("Health(%d).String(): got %q, want %q", h, got, want)
		}
	}
}

// BenchmarkRunRetryCycle measures the decision core for one operation with a
// budget and a breaker: a 503, one retry, a success. Each success refills
// the token its retry spent, so every iteration retries.
func BenchmarkRunRetryCycle(b *testing.B) {
	refill := BudgetConfig{Ratio: 1, MinPerSec: 1, Burst: 10}
	budgets, err := NewBudgets(refill, refill)
	if err != nil {
		b.Fatal(err)
	}
	cfg := DefaultBreakerConfig()
	cfg.FailureRatio = 0.9 // half the attempts fail here, by design
	c, err := NewCircuit(cfg)
	if err != nil {
		b.Fatal(err)
	}
	op := Operation{IdempotencyKey: "pg_ch_bench", Budget: budgets.For("acct", "merchant"), Breaker: c, Rand: rand.New(rand.NewPCG(1, 1))}
	p := DefaultPolicy()
	now := t0
	b.ReportAllocs()
	for b.Loop() {
		run, _ := NewRun(now, p, op)
		run.Begin(now)
		now = now.Add(ms(40))
		d := run.Next(now, Outcome{Class: ClassRetry, HTTPStatus: 503})
		if !d.Retry {
			b.Fatalf("decision: got stop %s, want a retry", d.Stop)
		}
		now = now.Add(d.Wait)
		if _, ok := run.Begin(now); !ok {
			b.Fatalf("retry: got stop %s, want an attempt", run.Report().Stop)
		}
		now = now.Add(ms(40))
		run.Next(now, Outcome{Class: ClassSuccess, HTTPStatus: 200})
	}
}

// TestRunUnfinishedPaymentIsAHealthyAnswer: a PaymentIntent answered 200 in processing or
// requires_action (a card asking for 3-D Secure) is an unknown outcome for the charge, but a
// healthy answer of the processor: however many come in a row, they never open the breaker.
// A 500 on the keyed write, the same class, is a processor failure.
func TestRunUnfinishedPaymentIsAHealthyAnswer(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		answer   step
		wantOpen bool
	}{
		{"200 requires_action", step{class: ClassUnknownFinal, status: 200, code: "requires_action", maybe: true, latency: 40 * time.Millisecond}, false},
		{"500 on the keyed write", step{class: ClassUnknownFinal, status: 500, maybe: true, latency: 40 * time.Millisecond}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newCircuitT(t, DefaultBreakerConfig())
			for range DefaultBreakerConfig().ConsecutiveFailures {
				s := runScript(t, DefaultPolicy(), Operation{IdempotencyKey: "k", Breaker: c}, tc.answer)
				if got := s.report.Result.String(); got != "pending" {
					t.Fatalf("result: got %s, want pending", got)
				}
			}
			if open := c.State(t0) == BreakerOpen; open != tc.wantOpen {
				t.Fatalf("breaker open after %d answers: %v, want %v", DefaultBreakerConfig().ConsecutiveFailures, open, tc.wantOpen)
			}
		})
	}
}
