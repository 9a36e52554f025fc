// Package policysim is the retry-policy simulator behind "paygate simulate":
// it shows what a retry policy does to one operation and to a population of
// operations in an outage, before the policy ships.
//
// # The same loop, on a fake clock
//
// The simulator runs the gateway's own retry loop, retry.Run, step by step:
// NewRun, then Begin, the attempt, Next, and the wait it asks for, until the
// loop stops (Cancel when the caller gives up), and prints the loop's own
// retry.Report. Nothing reads the real clock or sleeps, and there is no
// database: a deterministic discrete-event simulation keeps a priority queue
// of events (an operation arrives, an attempt starts, an answer arrives, a
// caller gives up) and jumps the fake clock from one to the next. Every
// simulation starts at Mon, 02 Mar 2026 12:00:00 GMT on the fake clock, the
// instant HTTP-dates in a script are written against. Each operation has its own retry.Run; in a
// population they all share one retry budget (retry.NewBudgets, one
// ScopeBudget) and one circuit breaker (retry.NewCircuits, one Circuit), as
// the operations of one processor account and merchant do in the gateway.
//
// The processor's answers are scripted. A step stands for one answer in Stripe's terms
// (Step.Answer: a 2xx a succeeded PaymentIntent, a 3xx a body that is not the processor's
// JSON, a 4xx or 5xx Stripe's error, of type card_error for a decline), and Classify has the
// gateway's processor adapter classify it with its own table (processor.ClassifyWrite, and
// processor.ClassifyRead for a read): there is one table. A test plays every kind of step to
// the adapter over HTTP, as that answer, and checks that it reads what the step means.
//
// # The file
//
// A simulation file is one JSON object. Every field but script or
// population may be left out: the policy then has the gateway's defaults
// (retry.DefaultPolicy, retry.DefaultScopeBudget,
// retry.DefaultBreakerConfig), the operation is a POST with an idempotency
// key. Unknown fields are refused.
//
//	{
//	  "description": "503, 503, 200",
//	  "policy": {"base_ms": 500, "cap_ms": 5000, "max_attempts": 4, "attempt_timeout_ms": 4000,
//	             "deadline_ms": 8000, "min_attempt_ms": 300, "retry_after_cap_ms": 10000,
//	             "answer_margin_ms": 100, "busy_wait_ms": 250, "max_clock_skew_ms": 30000,
//	             "budget": {"ratio": 0.15, "min_per_sec": 1, "burst": 10},
//	             "breaker": {"consecutive_failures": 10, "failure_ratio": 0.5, "min_requests": 20,
//	                         "window_ms": 10000, "open_for_ms": 5000, "probes": 3}},
//	  "operation": {"method": "POST", "idempotency_key": true, "cancel_at_ms": 0},
//	  "clock_skew_ms": 0,
//	  "script": [
//	    {"status": 503, "latency_ms": 40},
//	    {"status": 503, "latency_ms": 40},
//	    {"status": 200, "latency_ms": 40}
//	  ]
//	}
//
// The policy's fields are retry.Policy's, in milliseconds; budget is
// retry.BudgetConfig and breaker retry.BreakerConfig, and either may be null
// for none. Durations are whole milliseconds up to MaxMillis (a day);
// max_attempts is at most MaxAttempts. operation.method is GET, POST or
// DELETE; idempotency_key false makes a write that is never repeated once it
// may have been sent; cancel_at_ms, when given, is when the caller gives up,
// from the operation's start. clock_skew_ms is how far the processor's clock
// is ahead of the gateway's: every answer carries the processor's clock in
// its Date header, which the loop uses to correct an HTTP-date Retry-After.
//
// A script step is the processor's answer to one attempt, in order; when the
// loop asks for more attempts than the script holds, the last step answers
// again. At most MaxSteps steps.
//
// HTTP-dates are IMF-fixdate, RFC 850 or asctime, as the loop reads them,
// written against the fake clock. A processor may send any header, so
// retry_after and date are header values sent as they are (any text without
// control characters), and the loop reads them as the gateway does: a
// Retry-After that is neither delta-seconds nor an HTTP-date is ignored and
// the loop backs off; the Date header corrects an HTTP-date Retry-After by
// moving the loop's clock toward it by at most policy.max_clock_skew_ms
// (retry.ParseRetryAfter), and one that is no HTTP-date is ignored. A
// clock_skew_ms beyond the bound is corrected only that far too. The text
// output notes each.
//
//	status        HTTP status, 200 to 599 (required unless the step has no answer)
//	latency_ms    how long the answer takes; slower than the attempt's timeout is a timeout
//	retry_after   Retry-After header, sent as it is: delta-seconds, an HTTP-date, or any
//	              other text, which the loop ignores (a number means seconds; "" none)
//	date          Date header, replacing the processor's clock, sent as it is ("" for
//	              none): the loop corrects at most policy.max_clock_skew_ms of skew from it
//	body_code     the body's error code: lock_timeout, idempotency_key_in_use,
//	              idempotency_error, resource_missing, or a decline code (card_declined,
//	              insufficient_funds, ...)
//	replayed      true: Idempotent-Replayed, a stored answer for the key (final)
//	should_retry  Stripe-Should-Retry: true or false, overriding the status
//	timeout       true: sent, no answer within the attempt's timeout (it takes the whole timeout)
//	dropped       true: sent, then the connection closed after latency_ms without an answer
//	refused       true: the connection failed before sending
//
// Instead of a script, a population runs many operations:
//
//	"population": {"operations": 10000, "rate_per_sec": 100, "latency_ms": 40,
//	               "outage": {"from_ms": 0, "to_ms": 60000, "status": 503}, "error_rate": 0.1}
//
// Operation i arrives at i / rate_per_sec. An attempt that starts inside the
// outage window [from_ms, to_ms) is answered with the outage's status
// (default 503), an error status the loop retries: 429 or 500 to 599; any
// other is answered, at random with probability
// error_rate, with that status (503 without an outage), and else 200, after
// latency_ms (default 40). The draw for attempt n of operation i depends only
// on the seed, i and n, so different policies meet the same faults.
//
// An invalid file is a *FileError naming the field (policy.base_ms,
// script[2].status, population.outage.to_ms) or, for malformed JSON, the
// line and column.
//
// # Output
//
// For one operation, Timeline.WriteText prints one line per attempt, why
// the loop stopped and the result; Timeline.WriteJSON prints
//
//	{"result": "succeeded" | "declined" | "pending" | "failed:CODE",
//	 "attempts": [{"n", "at_ms", "timeout_ms", "status", "class", "backoff_cap_ms", "delay_ms",
//	               "retry_after_ms", "remaining_ms", "tokens_before", "tokens_after"}],
//	 "idempotency_keys": ["pg_op_1"]}
//
// with every attempt field taken from the loop's retry.AttemptRecord: at_ms
// from the operation's start, remaining_ms when the attempt started,
// backoff_cap_ms and delay_ms for the retry considered after it, status and
// retry_after_ms null when absent. The failure codes are the API's
// (deadline_exceeded, retry_budget_exhausted, circuit_open, max_attempts,
// invalid_request, canceled, processor_unavailable).
//
// For a population, Summary.WriteJSON prints {"operations", "attempts",
// "amplification", "succeeded", "declined", "pending", "failed",
// "failed_by_code", "retries_prevented_by_budget",
// "most_attempts_per_operation", "duration_ms", "per_second": [{"second",
// "originals", "retries"}]}, and WriteText the same with a bar per second.
//
// WriteSVG draws a picture without any dependency: a population's attempts
// per second as stacked bars (originals and retries apart) with the outage
// shaded, or one operation's attempts on its timeline with their timeouts,
// waits, the deadline and the stop.
//
// The jitter and the random faults come from the seed (DefaultSeed unless
// --seed says otherwise): the same file and seed always print the same
// bytes, text, JSON and SVG alike.
//
// # Comparisons
//
// Compare runs, on the same populations (a full outage of 10 000
// operations, and 10 % random 503s at 100 operations/s), paygate's default
// policy against stripe-go v76's default retries (2 retries after
// 500 ms·(1 + n²) less up to 25 % jitter, no budget, no Retry-After) and
// against three nested layers of 3 tries (27 attempts per operation at
// worst), and prints them side by side with the design's targets.
//
// # The command
//
// Main implements "paygate simulate FILE [--json] [--seed N] [--svg OUT]"
// and returns its exit status: 0, or 2 with one line on stderr naming the
// field for an invalid FILE or command line, or 1 when the output cannot be
// written.
package policysim
