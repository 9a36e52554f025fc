package retry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"time"

	"github.com/paygate/paygate/retry"
)

// The backoff ceiling doubles from the base up to the cap, and stays there
// however many retries are counted.
func ExampleBackoff_Ceiling() {
	b := retry.DefaultPolicy().Backoff()
	for _, n := range []int{0, 1, 2, 3, 4, 1000} {
		fmt.Printf("retry %d: delay in [0, %v)\n", n, b.Ceiling(n))
	}
	// Output:
	// retry 0: delay in [0, 500ms)
	// retry 1: delay in [0, 1s)
	// retry 2: delay in [0, 2s)
	// retry 3: delay in [0, 4s)
	// retry 4: delay in [0, 5s)
	// retry 1000: delay in [0, 5s)
}

func ExampleParseRetryAfter() {
	now := time.Date(2026, time.March, 2, 12, 0, 0, 0, time.UTC)
	skew := 30 * time.Second
	show := func(value, date string) {
		d, err := retry.ParseRetryAfter(value, date, now, skew)
		if err != nil {
			fmt.Printf("%q: %v\n", value, err)
			return
		}
		fmt.Printf("%q: wait %v\n", value, d)
	}
	show("120", "")
	show("Mon, 02 Mar 2026 12:00:10 GMT", "")
	show("Mon, 02 Mar 2026 11:59:00 GMT", "") // in the past
	// The processor's clock runs 2 s ahead: its Date header corrects it.
	show("Mon, 02 Mar 2026 12:00:10 GMT", "Mon, 02 Mar 2026 12:00:02 GMT")
	show("soon", "")
	// Output:
	// "120": wait 2m0s
	// "Mon, 02 Mar 2026 12:00:10 GMT": wait 10s
	// "Mon, 02 Mar 2026 11:59:00 GMT": wait 0s
	// "Mon, 02 Mar 2026 12:00:10 GMT": wait 8s
	// "soon": retry: invalid Retry-After: "soon" is neither delta-seconds nor an HTTP-date
}

// A simulator drives the decision core on its own fake clock: here, two 503
// answers then a success, with a seeded jitter source so the run is
// reproducible. Each retry spends a token; the budget's floor (one token a
// second) and the final success (0.15) refill it.
func ExampleRun() {
	start := time.Date(2026, time.March, 2, 12, 0, 0, 0, time.UTC)
	budgets, _ := retry.NewBudgets(retry.DefaultScopeBudget(), retry.DefaultGlobalBudget())
	op := retry.Operation{
		IdempotencyKey: "pg_ch_42",
		Budget:         budgets.For("acct_1", "merchant_1"),
		Rand:           rand.New(rand.NewPCG(1, 2)),
	}
	run, _ := retry.NewRun(start, retry.DefaultPolicy(), op)
	script := []retry.Outcome{
		{Class: retry.ClassRetry, HTTPStatus: http.StatusServiceUnavailable},
		{Class: retry.ClassRetry, HTTPStatus: http.StatusServiceUnavailable},
		{Class: retry.ClassSuccess, HTTPStatus: http.StatusOK},
	}
	now := start
	for {
		a, ok := run.Begin(now)
		if !ok {
			break
		}
		now = now.Add(40 * time.Millisecond) // the processor's latency
		d := run.Next(now, script[a.N-1])
		if !d.Retry {
			break
		}
		now = now.Add(d.Wait)
	}
	rep := run.Report()
	for _, a := range rep.Attempts {
		fmt.Printf("attempt %d at %4dms key %s: %-7s %d  cap %-5v delay %-5v tokens %.2f → %.2f\n",
			a.N, a.StartedAt.Sub(start).Milliseconds(), rep.IdempotencyKey, a.Class, a.HTTPStatus,
			a.BackoffCap, a.Delay.Round(time.Millisecond), a.TokensBefore, a.TokensAfter)
	}
	fmt.Println(rep.Result, "after", rep.Retries(), "retries; stop:", rep.Stop)
	// Output:
	// attempt 1 at    0ms key pg_ch_42: retry   503  cap 500ms delay 384ms tokens 20.00 → 19.00
	// attempt 2 at  424ms key pg_ch_42: retry   503  cap 1s    delay 616ms tokens 19.42 → 18.42
	// attempt 3 at 1080ms key pg_ch_42: success 200  cap 0s    delay 0s    tokens 19.23 → 19.23
	// succeeded after 2 retries; stop: succeeded
}

// A processor asking for 30 s when only 5 s of the deadline remain: the loop
// stops at once rather than sleep through the deadline.
func ExampleRun_retryAfterBeyondDeadline() {
	start := time.Date(2026, time.March, 2, 12, 0, 0, 0, time.UTC)
	run, _ := retry.NewRun(start, retry.DefaultPolicy(), retry.Operation{
		IdempotencyKey: "pg_ch_43",
		Deadline:       start.Add(5 * time.Second),
	})
	run.Begin(start)
	d := run.Next(start.Add(10*time.Millisecond), retry.Outcome{
		Class:         retry.ClassRetryAfter,
		HTTPStatus:    http.StatusTooManyRequests,
		ProcessorCode: "rate_limit",
		RetryAfter:    "30",
	})
	fmt.Println(d.Retry, d.Stop, d.Result, "retryable:", d.Result.Retryable)
	// Output:
	// false deadline_exceeded failed:deadline_exceeded retryable: true
}

// Uncertainty is sticky: after a lost response the loop may only report
// pending, whatever stops it, unless a later answer settles the outcome.
func ExampleRun_uncertaintyIsSticky() {
	start := time.Date(2026, time.March, 2, 12, 0, 0, 0, time.UTC)
	p := retry.DefaultPolicy()
	p.MaxAttempts = 1
	run, _ := retry.NewRun(start, p, retry.Operation{IdempotencyKey: "pg_ch_44"})
	run.Begin(start)
	d := run.Next(start.Add(4*time.Second), retry.Outcome{Class: retry.ClassOutcomeUnknown})
	fmt.Println(d.Stop, "→", d.Result)
	// Output:
	// max_attempts → pending
}

// Do runs the same decisions in real time. The attempt function performs one
// request with the operation's idempotency key and classifies the answer.
func ExampleDo() {
	attempt := func(ctx context.Context, a retry.Attempt) retry.Outcome {
		// A real adapter sends the request here, bounded by ctx, with
		// a.IdempotencyKey, and maps the processor's answer to a class.
		return retry.Outcome{Class: retry.ClassDecline, HTTPStatus: http.StatusPaymentRequired, ProcessorCode: "insufficient_funds"}
	}
	rep, err := retry.Do(context.Background(), retry.DefaultPolicy(), retry.Operation{IdempotencyKey: "pg_ch_45"}, attempt)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rep.Result, len(rep.Attempts), rep.Attempts[0].ProcessorCode)
	// Output:
	// declined 1 insufficient_funds
}

func ExampleResult_String() {
	fmt.Println(retry.Result{Status: retry.StatusSucceeded})
	fmt.Println(retry.Result{Status: retry.StatusPending})
	fmt.Println(retry.Result{Status: retry.StatusFailed, Code: retry.CodeRetryBudgetExhausted, Retryable: true})
	// Output:
	// succeeded
	// pending
	// failed:retry_budget_exhausted
}

// An attempt record encodes with the contract's attempts_detail names.
func ExampleAttemptRecord_MarshalJSON() {
	rec := retry.AttemptRecord{
		N:                1,
		StartedAt:        time.Date(2026, time.March, 2, 12, 0, 0, 0, time.UTC),
		Duration:         12 * time.Millisecond,
		Timeout:          4 * time.Second,
		Remaining:        8 * time.Second,
		Class:            retry.ClassRetryAfter,
		HTTPStatus:       429,
		ProcessorCode:    "rate_limit",
		RetryAfterHeader: "2",
		RetryAfter:       2 * time.Second,
		HasRetryAfter:    true,
		BackoffCap:       500 * time.Millisecond,
		Backoff:          137 * time.Millisecond,
		Delay:            2 * time.Second,
		TokensBefore:     10,
		TokensAfter:      9,
	}
	b, _ := json.MarshalIndent(rec, "", "  ")
	fmt.Println(string(b))
	// Output:
	// {
	//   "n": 1,
	//   "started_at": "2026-03-02T12:00:00Z",
	//   "duration_ms": 12,
	//   "timeout_ms": 4000,
	//   "class": "retry_after",
	//   "http_status": 429,
	//   "processor_code": "rate_limit",
	//   "retry_after_ms": 2000,
	//   "backoff_ms": 137,
	//   "budget_tokens_before": 10,
	//   "budget_tokens_after": 9,
	//   "backoff_cap_ms": 500,
	//   "delay_ms": 2000,
	//   "remaining_ms": 8000,
	//   "maybe_executed": false,
	//   "retry_after_header": "2"
	// }
}
