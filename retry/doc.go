// Package retry holds the mechanics of paygate's one retry loop — backoff, Retry-After, the
// deadline, the retry budget and the circuit breaker (per process or shared by the fleet),
// cancellation and the per-operation report — and knows nothing of charges: the caller's
// attempt performs one request and classifies it. Run is the pure decision core (every
// method takes the time); Do drives it in real time. After a failed attempt Run.Next retries
// only when five answers allow it, in order: the failure is temporary; the operation is
// replay-safe; the earliest useful time (backoff, Retry-After, busy wait); the deadline fits
// it; the budget admits one more attempt. docs/retry.md explains each.
package retry
