package policysim

import (
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/paygate/paygate/retry"
)

// referenceRun drives retry.Run for f's script with the loop written out in
// retry.Run's documentation, without the event engine, and returns its
// report. Cancellation is not modelled: use it for files without
// cancel_at_ms.
func referenceRun(t *testing.T, f *File, seed uint64) retry.Report {
	t.Helper()
	op := retry.Operation{
		Idempotent: f.Operation.Read(),
		Rand:       rand.New(rand.NewPCG(seed, jitterStream)),
	}
	if f.Operation.IdempotencyKey {
		op.IdempotencyKey = "pg_op_1"
	}
	if f.Budget != nil {
		budgets, err := retry.NewBudgets(*f.Budget, retry.BudgetConfig{})
		if err != nil {
			t.Fatalf("NewBudgets: got error %v, want nil", err)
		}
		op.Budget = budgets.For("a", "m")
	}
	if f.Breaker != nil {
		c, err := retry.NewCircuit(*f.Breaker)
		if err != nil {
			t.Fatalf("NewCircuit: got error %v, want nil", err)
		}
		op.Breaker = c
	}
	run, err := retry.NewRun(origin, f.Policy, op)
	if err != nil {
		t.Fatalf("NewRun: got error %v, want nil", err)
	}
	now := origin
	for {
		a, ok := run.Begin(now)
		if !ok {
			break
		}
		answer, took := perform(f.Script[min(a.N, len(f.Script))-1], a.Timeout)
		now = now.Add(took)
		if answer.answered() && !answer.HasDate && answer.RetryAfter != "" {
			answer.Date = now.Add(f.ClockSkew).UTC().Format(http.TimeFormat)
		}
		d := run.Next(now, Classify(answer, f.Operation.Read()))
		if !d.Retry {
			break
		}
		now = now.Add(d.Wait)
	}
	return run.Report()
}

// scriptFiles are single-operation files beyond the examples, for the
// agreement tests.
var scriptFiles = map[string]string{
	"many 503s":       `{"script": [{"status": 503, "latency_ms": 40}]}`,
	"read timeouts":   `{"operation": {"method": "GET"}, "script": [{"timeout": true}, {"status": 500}, {"status": 200, "latency_ms": 5}]}`,
	"tight budget":    `{"policy": {"budget": {"burst": 1, "min_per_sec": 0, "ratio": 0}}, "script": [{"status": 502, "latency_ms": 10}]}`,
	"no guards":       `{"policy": {"budget": null, "breaker": null, "max_attempts": 10}, "script": [{"refused": true, "latency_ms": 3}]}`,
	"asctime date":    `{"script": [{"status": 429, "retry_after": "Mon Mar  2 12:00:02 2026", "date": "Monday, 02-Mar-26 11:59:59 GMT"}, {"status": 200}]}`,
	"retry-after cap": `{"policy": {"retry_after_cap_ms": 1000}, "script": [{"status": 503, "retry_after": "2"}, {"status": 200}]}`,
	"busy":            `{"script": [{"status": 409, "body_code": "idempotency_key_in_use", "latency_ms": 10}, {"status": 200}]}`,
}

// agreementFiles returns every single-operation file of the tests and the
// examples, by name.
func agreementFiles(t *testing.T) map[string]*File {
	t.Helper()
	files := map[string]*File{}
	for name, src := range scriptFiles {
		files[name] = mustParse(t, src)
	}
	for name := range exampleScripts {
		files[name] = readExample(t, name)
	}
	return files
}

func TestTimelineMatchesReferenceLoop(t *testing.T) {
	t.Parallel()
	for name, f := range agreementFiles(t) {
		if f.Operation.CancelAt > 0 {
			continue
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			for _, seed := range []uint64{1, 2, 99} {
				got := mustScript(t, f, seed).Report
				want := referenceRun(t, f, seed)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("seed %d: got report\n%+v\nwant the reference loop's\n%+v", seed, got, want)
				}
			}
		})
	}
}

// reportAttempt is the part of retry.Report's JSON that the timeline shows.
type reportAttempt struct {
	N                  int       `json:"n"`
	StartedAt          time.Time `json:"started_at"`
	DurationMs         int64     `json:"duration_ms"`
	TimeoutMs          int64     `json:"timeout_ms"`
	Class              string    `json:"class"`
	HTTPStatus         *int      `json:"http_status"`
	RetryAfterMs       *int64    `json:"retry_after_ms"`
	BudgetTokensBefore float64   `json:"budget_tokens_before"`
	BudgetTokensAfter  float64   `json:"budget_tokens_after"`
	BackoffCapMs       int64     `json:"backoff_cap_ms"`
	DelayMs            int64     `json:"delay_ms"`
	RemainingMs        int64     `json:"remaining_ms"`
}

func TestTimelineAgreesWithReportJSON(t *testing.T) {
	t.Parallel()
	for name, f := range agreementFiles(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tl := mustScript(t, f, DefaultSeed)
			_, js, _ := outputs(t, tl)
			var got timelineJSON
			if err := json.Unmarshal([]byte(js), &got); err != nil {
				t.Fatalf("decoding the timeline: got error %v, want nil", err)
			}
			raw, err := json.Marshal(tl.Report)
			if err != nil {
				t.Fatalf("encoding the report: got error %v, want nil", err)
			}
			var rep struct {
				Result    string          `json:"result"`
				StartedAt time.Time       `json:"started_at"`
				Key       string          `json:"idempotency_key"`
				Attempts  []reportAttempt `json:"attempts"`
			}
			if err := json.Unmarshal(raw, &rep); err != nil {
				t.Fatalf("decoding the report: got error %v, want nil", err)
			}
			if got.Result != rep.Result {
				t.Errorf("result: got %s, want the report's %s", got.Result, rep.Result)
			}
			if len(got.Attempts) != len(rep.Attempts) {
				t.Fatalf("attempts: got %d, want the report's %d", len(got.Attempts), len(rep.Attempts))
			}
			for i, a := range got.Attempts {
				r := rep.Attempts[i]
				pairs := []struct {
					field     string
					got, want any
				}{
					{"n", a.N, r.N},
					{"at_ms", a.AtMs, r.StartedAt.Sub(rep.StartedAt).Milliseconds()},
					{"timeout_ms", a.TimeoutMs, r.TimeoutMs},
					{"status", deref(a.Status), deref(r.HTTPStatus)},
					{"class", string(a.Class), r.Class},
					{"backoff_cap_ms", a.BackoffCapMs, r.BackoffCapMs},
					{"delay_ms", a.DelayMs, r.DelayMs},
					{"retry_after_ms", deref(a.RetryAfterMs), deref(r.RetryAfterMs)},
					{"remaining_ms", a.RemainingMs, r.RemainingMs},
					{"tokens_before", a.TokensBefore, r.BudgetTokensBefore},
					{"tokens_after", a.TokensAfter, r.BudgetTokensAfter},
				}
				for _, p := range pairs {
					if p.got != p.want {
						t.Errorf("attempt %d %s: got %v, want the report's %v", i+1, p.field, p.got, p.want)
					}
				}
			}
			wantKeys := []string{}
			if rep.Key != "" && len(rep.Attempts) > 0 {
				wantKeys = []string{rep.Key}
			}
			if !slices.Equal(got.IdempotencyKeys, wantKeys) {
				t.Errorf("idempotency_keys: got %v, want %v", got.IdempotencyKeys, wantKeys)
			}
		})
	}
}

// deref returns *p, or nil for a nil pointer, for comparisons.
func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestTimelineIsConsistent(t *testing.T) {
	t.Parallel()
	for name, f := range agreementFiles(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tl := mustScript(t, f, 7)
			rep := tl.Report
			lines := tl.Attempts()
			deadline := rep.Deadline.Sub(rep.Start)
			if len(lines) > f.Policy.MaxAttempts {
				t.Errorf("attempts: got %d, want at most max_attempts %d", len(lines), f.Policy.MaxAttempts)
			}
			for i, l := range lines {
				rec := rep.Attempts[i]
				if i == 0 && l.AtMs != 0 {
					t.Errorf("attempt 1 at_ms: got %d, want 0", l.AtMs)
				}
				if got, want := rec.Remaining, deadline-rec.StartedAt.Sub(rep.Start); got != want {
					t.Errorf("attempt %d remaining: got %v, want deadline − start %v", l.N, got, want)
				}
				if l.TimeoutMs > f.Policy.AttemptTimeout.Milliseconds() {
					t.Errorf("attempt %d timeout_ms: got %d, want at most %d", l.N, l.TimeoutMs, f.Policy.AttemptTimeout.Milliseconds())
				}
				if l.DelayMs > 0 && l.RetryAfterMs == nil && l.DelayMs > max(l.BackoffCapMs, f.Policy.BusyWait.Milliseconds()) {
					t.Errorf("attempt %d delay_ms: got %d, want at most backoff_cap_ms %d", l.N, l.DelayMs, l.BackoffCapMs)
				}
				if l.RetryAfterMs != nil && l.DelayMs > 0 && l.DelayMs < *l.RetryAfterMs {
					t.Errorf("attempt %d delay_ms: got %d, want at least retry_after_ms %d", l.N, l.DelayMs, *l.RetryAfterMs)
				}
				if l.TokensAfter > l.TokensBefore {
					t.Errorf("attempt %d tokens: got %v → %v, want no rise across a decision", l.N, l.TokensBefore, l.TokensAfter)
				}
				if i+1 < len(lines) {
					// The next attempt starts when this one ended plus the wait.
					next := rep.Attempts[i+1].StartedAt
					if want := rec.StartedAt.Add(rec.Duration).Add(rec.Delay); !next.Equal(want) {
						t.Errorf("attempt %d start: got %v, want the previous end plus its delay %v", l.N+1, next.Sub(rep.Start), want.Sub(rep.Start))
					}
				}
			}
			if rep.Result.Status == retry.StatusFailed && rep.Uncertain {
				t.Errorf("result: got failed after an attempt that may have executed, want pending")
			}
		})
	}
}

func TestIssueCases(t *testing.T) {
	t.Parallel()
	t.Run("503, 503, 200: rising caps, one key", func(t *testing.T) {
		t.Parallel()
		tl := mustScript(t, readExample(t, "503-503-200.json"), DefaultSeed)
		lines := tl.Attempts()
		if lines[0].BackoffCapMs != 500 || lines[1].BackoffCapMs != 1000 {
			t.Errorf("backoff caps: got %d, %d, want 500, 1000", lines[0].BackoffCapMs, lines[1].BackoffCapMs)
		}
		if !slices.Equal(tl.Keys, []string{"pg_op_1"}) {
			t.Errorf("keys: got %v, want [pg_op_1]", tl.Keys)
		}
	})
	t.Run("429 Retry-After 30 with 5 s left", func(t *testing.T) {
		t.Parallel()
		tl := mustScript(t, readExample(t, "429-retry-after-30-deadline.json"), DefaultSeed)
		l := tl.Attempts()[0]
		if l.RetryAfterMs == nil || *l.RetryAfterMs != 30000 {
			t.Errorf("retry_after_ms: got %v, want 30000", deref(l.RetryAfterMs))
		}
	})
	for _, tt := range []struct {
		file     string
		min, max int64
	}{
		{"retry-after-date-ahead.json", 2900, 3000},
		{"retry-after-date-behind.json", 0, 0},
		{"retry-after-date-skewed.json", 2900, 3000},
	} {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			l := mustScript(t, readExample(t, tt.file), DefaultSeed).Attempts()[0]
			if l.RetryAfterMs == nil || *l.RetryAfterMs < tt.min || *l.RetryAfterMs > tt.max {
				t.Fatalf("retry_after_ms: got %v, want in [%d, %d]", deref(l.RetryAfterMs), tt.min, tt.max)
			}
			if l.DelayMs < *l.RetryAfterMs {
				t.Errorf("delay_ms: got %d, want at least retry_after_ms %d", l.DelayMs, *l.RetryAfterMs)
			}
		})
	}
	t.Run("422 spends no token", func(t *testing.T) {
		t.Parallel()
		l := mustScript(t, readExample(t, "422-invalid-request.json"), DefaultSeed).Attempts()[0]
		if l.TokensBefore != l.TokensAfter {
			t.Errorf("tokens: got %v → %v, want unchanged", l.TokensBefore, l.TokensAfter)
		}
	})
	t.Run("write without key carries none", func(t *testing.T) {
		t.Parallel()
		tl := mustScript(t, readExample(t, "timeout-write-without-key.json"), DefaultSeed)
		if len(tl.Keys) != 0 {
			t.Errorf("keys: got %v, want none", tl.Keys)
		}
		if !tl.Report.Uncertain {
			t.Errorf("uncertain: got false, want true")
		}
	})
	t.Run("lost response then success under the same key", func(t *testing.T) {
		t.Parallel()
		tl := mustScript(t, readExample(t, "lost-response-then-success.json"), DefaultSeed)
		if !slices.Equal(tl.Keys, []string{"pg_op_1"}) {
			t.Errorf("keys: got %v, want [pg_op_1]", tl.Keys)
		}
	})
	t.Run("cancel during backoff sends nothing later", func(t *testing.T) {
		t.Parallel()
		tl := mustScript(t, readExample(t, "cancel-during-backoff.json"), DefaultSeed)
		if got, want := tl.Report.End.Sub(tl.Report.Start), 500*msec; got != want {
			t.Errorf("stopped at: got %v, want %v", got, want)
		}
	})
}

func TestCancelDuringAttempt(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		step   string
		result string
	}{
		{"sent", `{"status": 200, "latency_ms": 1000}`, "pending"},
		{"timeout", `{"timeout": true}`, "pending"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := mustParse(t, `{"operation": {"cancel_at_ms": 100}, "script": [`+tt.step+`]}`)
			tl := mustScript(t, f, DefaultSeed)
			if got := tl.Result(); got != tt.result {
				t.Errorf("result: got %s, want %s", got, tt.result)
			}
			if got, want := tl.Report.Stop, retry.StopCanceled; got != want {
				t.Errorf("stop: got %s, want %s", got, want)
			}
		})
	}
}

// TestBusyIsRetriedAndUncertain: a 409 (the processor's answer to a
// concurrent request under the same key, whatever its body code) and a 429
// lock_timeout are retried under the same key after the busy wait, as the
// gateway retries them, and a loop that ends on one is pending: the earlier
// request may be executing.
func TestBusyIsRetriedAndUncertain(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		file     string
		result   string
		attempts int
	}{
		{"409 then 200", `{"script": [{"status": 409, "latency_ms": 10}, {"status": 200}]}`, "succeeded", 2},
		{"409 lock_timeout then 200", `{"script": [{"status": 409, "body_code": "lock_timeout"}, {"status": 200}]}`, "succeeded", 2},
		{"409 to the last attempt", `{"policy": {"max_attempts": 3}, "script": [{"status": 409, "latency_ms": 10}]}`, "pending", 3},
		{"409 lock_timeout to the last attempt", `{"policy": {"max_attempts": 2}, "script": [{"status": 409, "body_code": "lock_timeout"}]}`, "pending", 2},
		{"409 should_retry false", `{"script": [{"status": 409, "should_retry": false}]}`, "pending", 1},
		{"429 lock_timeout to the deadline", `{"policy": {"deadline_ms": 1000, "max_attempts": 100, "budget": null, "breaker": null}, "script": [{"status": 429, "body_code": "lock_timeout", "latency_ms": 100}]}`, "pending", 0},
		{"409 on a read to the last attempt", `{"operation": {"method": "GET"}, "policy": {"max_attempts": 2}, "script": [{"status": 409}]}`, "failed:max_attempts", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tl := mustScript(t, mustParse(t, tt.file), DefaultSeed)
			if got := tl.Result(); got != tt.result {
				t.Errorf("result: got %s, want %s", got, tt.result)
			}
			lines := tl.Attempts()
			if tt.attempts > 0 && len(lines) != tt.attempts {
				t.Errorf("attempts: got %d, want %d", len(lines), tt.attempts)
			}
			if len(lines) < 2 && tt.attempts != 1 {
				t.Errorf("attempts: got %d, want the busy answer retried", len(lines))
			}
			busyWait := retry.DefaultPolicy().BusyWait.Milliseconds()
			if len(lines) > 1 && !tl.File.Operation.Read() && lines[0].DelayMs < busyWait {
				t.Errorf("delay after the busy answer: got %d ms, want at least the busy wait %d ms", lines[0].DelayMs, busyWait)
			}
			if len(tl.Keys) > 1 {
				t.Errorf("keys: got %v, want one key for every attempt", tl.Keys)
			}
		})
	}
}

// TestSkewBeyondTheBoundIsShown: a processor clock further off than
// policy.max_clock_skew_ms is corrected only that far, as in the gateway,
// and the text output says so instead of leaving it silent.
func TestSkewBeyondTheBoundIsShown(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		file string
		want string // a line of the text output
	}{
		{"within", `{"clock_skew_ms": 20000, "script": [{"status": 200}]}`, "processor clock: +20000 ms from ours\n"},
		{"beyond", `{"clock_skew_ms": 3600000, "script": [{"status": 200}]}`,
			"processor clock: +3600000 ms from ours (the loop corrects at most 30000 ms of it: max_clock_skew_ms)\n"},
		{"beyond, behind", `{"policy": {"max_clock_skew_ms": 1000}, "clock_skew_ms": -2000, "script": [{"status": 200}]}`,
			"processor clock: -2000 ms from ours (the loop corrects at most 1000 ms of it: max_clock_skew_ms)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			text, _, _ := outputs(t, mustScript(t, mustParse(t, tt.file), DefaultSeed))
			if !strings.Contains(text, tt.want) {
				t.Errorf("text: got\n%s\nwant the line %q", text, tt.want)
			}
		})
	}
}

// TestDateWithinTheBoundIsUsed: a Date header within the bound corrects
// the skew of an HTTP-date Retry-After, so the wait is the distance between
// the two dates (the reported case, written against the fake clock).
func TestDateWithinTheBoundIsUsed(t *testing.T) {
	t.Parallel()
	f := mustParse(t, `{"script": [{"status": 429, "retry_after": "Mon, 02 Mar 2026 12:00:23 GMT",
		"date": "Mon, 02 Mar 2026 12:00:20 GMT"}, {"status": 200}]}`)
	l := mustScript(t, f, DefaultSeed).Attempts()[0]
	if l.RetryAfterMs == nil || *l.RetryAfterMs != 3000 {
		t.Errorf("retry_after_ms: got %v, want 3000", deref(l.RetryAfterMs))
	}
}

// TestTimelineAddsUp checks that a timeline's whole milliseconds add up: an attempt's start
// plus its latency and delay is the next one's start, and its start plus its remaining time
// is the deadline, whatever the jitter drew.
func TestTimelineAddsUp(t *testing.T) {
	const latency, deadline = 37, 60000
	steps := strings.Repeat(`{"status": 503, "latency_ms": 37}, `, 9) + `{"status": 200, "latency_ms": 37}`
	f := mustParse(t, withScript(`"policy": {"base_ms": 100, "cap_ms": 5000, "max_attempts": 10,
		"deadline_ms": 60000, "budget": {"ratio": 0.1, "min_per_sec": 1, "burst": 100}},`, "["+steps+"]"))
	for seed := uint64(1); seed <= 50; seed++ {
		lines := mustScript(t, f, seed).Attempts()
		if len(lines) != 10 {
			t.Fatalf("seed %d: got %d attempts, want 10", seed, len(lines))
		}
		for i, l := range lines {
			if l.AtMs+l.RemainingMs != deadline {
				t.Errorf("seed %d attempt %d: at_ms %d + remaining_ms %d, want %d", seed, l.N, l.AtMs, l.RemainingMs, deadline)
			}
			if i > 0 && lines[i-1].AtMs+latency+lines[i-1].DelayMs != l.AtMs {
				t.Errorf("seed %d attempt %d: at_ms %d, want %d + %d + %d", seed, l.N, l.AtMs, lines[i-1].AtMs, latency, lines[i-1].DelayMs)
			}
		}
	}
}
