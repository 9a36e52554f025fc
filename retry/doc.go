// Package retry holds the mechanics of paygate's retry loop: backoff,
// Retry-After, deadlines, the shared retry budget, the circuit breaker,
// cancellation and the per-operation report. It knows nothing of charges or
// of any processor's API: the caller's attempt function performs one request
// and classifies its outcome (the processor adapter supplies the meaning),
// and this package decides what happens next.
//
// # Two layers: a decision core and a driver
//
// Run is the decision core. It is step-wise and pure: no goroutines, no
// sleeping, no clock. Every method takes the current time:
//
//	run, err := retry.NewRun(now, policy, op)
//	a, ok := run.Begin(now)         // may the next attempt start? its timeout
//	d := run.Next(now, outcome)     // stop with a result, or wait d.Wait
//	rep := run.Report()
//
// Do is the thin real-time driver used by the gateway: it runs the same Run,
// gives each attempt a context deadline, sleeps between attempts on timers
// that end the moment the context ends, and logs each decision. Tests drive
// Do under testing/synctest; the retry-policy simulator drives Run directly
// on its own fake clock, including a population of thousands of operations
// sharing one budget and one breaker in a discrete-event simulation:
//
//	for each event, in time order:
//		begin:  a, ok := run.Begin(ev.At)
//		        if ok { schedule end at ev.At+latency (≤ a.Timeout) with the scripted outcome }
//		end:    d := run.Next(ev.At, outcome)
//		        if d.Retry { schedule begin at ev.At+d.Wait }
//
// With a seeded *rand.Rand in Operation.Rand and the budget and breaker
// driven by the same event times, such a simulation is deterministic.
//
// # The five questions
//
// After a failed attempt, Next retries only when all five answers allow it,
// asked in this order:
//
//  1. Is the failure temporary? The class says so (see below).
//  2. Is the operation replay-safe? An attempt that may have executed is
//     repeated only under the same idempotency key (Operation.IdempotencyKey)
//     or for an idempotent read (Operation.Idempotent). A write without a key
//     is never repeated once it may have been sent: StopNotReplaySafe.
//     Before this, the attempt limit: there is no wait after the last
//     allowed attempt (StopMaxAttempts).
//  3. When is the earliest useful time? max(full-jitter backoff, the
//     processor's Retry-After, Policy.BusyWait for a busy key): jitter
//     never lands below the processor's wait.
//  4. Does the absolute deadline fit that wait, Policy.AnswerMargin and
//     Policy.MinAttempt? If not, the loop stops now (StopDeadline) instead of
//     sleeping through the deadline. A Retry-After longer than
//     Policy.RetryAfterCap stops it too (StopRetryAfterTooLong): the loop
//     never retries earlier than the processor asked.
//  5. Does the budget admit one more attempt? Asked last, so a token is only
//     spent on a retry that will be sent; an empty budget is an immediate
//     refusal (StopBudget), never a wait.
//
// Begin then checks, before every attempt including the first, that the
// attempt still gets a useful timeout, min(Policy.AttemptTimeout, remaining −
// Policy.AnswerMargin) ≥ Policy.MinAttempt (else StopDeadline), and that the
// breaker admits it (else StopCircuitOpen). A retry refused by the breaker
// after its wait forfeits the token it was granted: a conservative error.
//
// # Classes
//
// The caller's classifier maps each answer to a Class:
//
//	class            example                                 loop             breaker
//	success          200 succeeded                           stop: succeeded  healthy
//	decline          402 card_error                          stop: declined   healthy
//	not_sent         refused, DNS, reset before writing      retry            failure
//	retry            502, 503, 504                           retry (backoff)  failure
//	retry_after      429 rate_limit                          retry (≥ R-A)    neutral
//	busy             409 idempotency_key_in_use, 429 lock    retry (≥ busy)   neutral
//	outcome_unknown  timeout or drop after writing           retry if safe    failure
//	unknown_final    500 on a keyed write                    stop: pending    failure
//	stored_result    Idempotent-Replayed: true (not 2xx/402) stop: pending    neutral
//	terminal         400 idempotency_error, other 4xx        stop: failed     neutral
//
// Outcome.MaybeExecuted marks any other outcome that may have taken effect
// (a gateway 504, for instance). An unknown class is treated as
// unknown_final: the loop neither retries nor claims failure for an answer it
// does not understand.
//
// # Results, and why uncertainty is sticky
//
// The result is succeeded, declined, pending (the outcome is unknown) or
// failed with a Code and a Retryable flag. Once an attempt may have executed
// at the processor, the run is uncertain, and the result is pending unless a
// later answer under the same key settles it (a success or a decline) —
// whatever stops the loop: deadline, budget, breaker, attempt limit,
// cancellation, or even a terminal 4xx. failed therefore always means that
// nothing can have happened at the processor (or that it rejected the
// request as invalid), and a pending operation is resolved by
// reconciliation, never by a second operation.
//
// # Retry-After
//
// ParseRetryAfter accepts delta-seconds and the three HTTP-date forms of
// RFC 9110 (IMF-fixdate, and the obsolete RFC 850 and asctime forms), the
// leap second 23:59:60 included; a two-digit RFC 850 year more than 50 years
// ahead, date against date, is the century before. A date in the past means
// no wait. When the response carries a valid Date header,
// the wait is measured on the processor's clock, with the correction bounded
// by Policy.MaxClockSkew. An invalid value is recorded in the report and
// ignored: the loop falls back to backoff.
//
// # Retry budget
//
// Budgets keeps a token bucket per scope (processor account, merchant) under
// one global bucket; a retry needs a token from both. First attempts never
// spend; each retry spends one token; only successful calls (a success or a
// decline: the processor answered) refill a fraction of a token
// (BudgetConfig.Ratio, 0.15 by default), so an outage cannot refill it. A
// floor of BudgetConfig.MinPerSec tokens a second lets a quiet scope retry an
// isolated failure, and BudgetConfig.Burst bounds the stock. The reported
// token counts are the smaller of the two buckets', so they explain every
// decision. The buckets are written here rather than with
// golang.org/x/time/rate because its limiter refills only with time: it has
// no way to add tokens on success, nor to take two buckets atomically
// without a refund path. The Budget interface lets a fleet-wide budget (Fleet,
// below) replace the in-process one.
//
// # Circuit breaker
//
// Circuits keeps one Circuit per processor account. Only processor-health
// failures count (refusals, 5xx, timeouts); declines count as healthy
// answers and other 4xx, rate limits, busy keys and cancellations are
// neutral, so a card-testing attack cannot open the circuit for every
// merchant of the account. It opens after BreakerConfig.ConsecutiveFailures
// failures in a row, or a failure ratio over a sliding window; after
// BreakerConfig.OpenFor it admits a few probes, and closes once they
// succeed. The breaker is written here rather than taken from
// github.com/sony/gobreaker/v2: every gobreaker v2.4.0 entry point (State,
// Execute, the two-step Allow and its done callback, NewCircuitBreaker)
// reads time.Now itself, with no way to inject a clock, so the
// discrete-event simulator, which runs outside any test and has no real time,
// could not drive it. failsafe-go is not among the module's dependencies.
// Circuit takes every time as an argument instead.
//
// # Fleet-wide budget and breaker
//
// Budgets and Circuits live in one process: N replicas would retry up to N
// times the budget, and one replica's open circuit would protect nobody else.
// Fleet keeps the same buckets and circuits for every replica together, through
// a FleetStore the caller supplies (the store keeps it in PostgreSQL), without
// a round trip per decision:
//
//   - Each replica leases whole tokens from the shared buckets and spends them
//     in memory. Its background loop (Fleet.Run, every DefaultFleetSync) adds
//     the replica's own deposits to the shared buckets, so each success counts
//     once however many replicas there are, and tops its leases up to twice its
//     recent demand per sync, between two tokens and a quarter of the burst
//     (and at once when it spends its last token); what it holds beyond that
//     goes back. The floor accrues once, in the
//     shared bucket, so the whole fleet gets it, not each replica.
//   - Fleet.Close gives the leases back when a replica stops; a replica that
//     dies loses what it held, at most a quarter of each burst. A sync that
//     fails forgets the deposits it carried rather than risk counting them
//     twice; its grants are lost like a crash's lease. Both errors are on the
//     side of fewer retries.
//   - A scope's first retry on a replica is admitted on credit (one token),
//     owed to the shared bucket and paid at the next sync, so a quiet scope
//     retries an isolated failure without waiting for a sync.
//   - Circuits decide on each replica's own answers; an opening is written
//     with its open-until time, and every replica holds its own circuit open
//     until then from its next sync. Each then probes on its own.
//
// BucketSync.Lease is the shared bucket's rule, so that every FleetStore
// applies the same one.
//
// # Cancellation
//
// Every wait in Do ends at once when its context ends, and a cancelled
// operation never starts another attempt. Cancellation is reported as
// canceled (or deadline_exceeded once past the deadline), never as a
// processor failure: the breaker does not count the interrupted attempt.
// If an earlier attempt may have executed, the result is pending. An
// operation that must finish once sent, whatever its caller does, runs
// under context.WithoutCancel with its own deadline.
//
// # Report and logs
//
// Report lists every attempt (AttemptRecord: the contract's attempts_detail
// fields, plus the backoff cap, the chosen delay and the remaining deadline)
// and the stop reason; its JSON form uses the contract's field names. Do
// logs each retry decision to Operation.Logger with stable keys: attempt,
// class, http_status, processor_code, retry_after_ms, backoff_cap_ms,
// backoff_ms, delay_ms, budget_tokens, remaining_ms; and the end of the loop
// with stop_reason, result, attempts and uncertain.
//
// # Concurrency
//
// Budgets, ScopeBudget, Circuits, Circuit, Fleet and FleetBudget are safe for
// concurrent use. A
// Run belongs to one goroutine. A *rand.Rand is not safe for concurrent use:
// leave Operation.Rand nil in production to use the global source.
package retry
