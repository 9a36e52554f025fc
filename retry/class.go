package retry

// Class is the meaning of one attempt's outcome, as decided by the caller's
// classifier (the processor adapter). The loop acts on the class alone: it
// never looks at status codes or error bodies itself.
//
// The string values are stable: they appear in reports, logs and the
// retry-policy simulator's output.
type Class string

// The classes of an attempt's outcome.
const (
	// ClassSuccess: the processor answered and the operation took effect.
	// Final; settles any earlier uncertainty.
	ClassSuccess Class = "success"

	// ClassDecline: the processor answered with a business refusal (a card
	// decline). Final, never retried here; settles any earlier uncertainty.
	ClassDecline Class = "decline"

	// ClassNotSent: the request never left (connection refused, DNS failure,
	// reset before the request was written). Temporary, and safe to repeat
	// even without an idempotency key.
	ClassNotSent Class = "not_sent"

	// ClassRetry: a temporary failure answered before execution, or one
	// repeatable with the same key (502, 503, 504). Retried with backoff;
	// honours a Retry-After header when one is present.
	ClassRetry Class = "retry"

	// ClassRetryAfter: the processor asked to come back later (429
	// rate_limit). Retried no earlier than its Retry-After, or after backoff
	// when the header is absent or invalid.
	ClassRetryAfter Class = "retry_after"

	// ClassBusy: the same key is being executed by a concurrent request (409
	// idempotency_key_in_use, 429 lock_timeout). Retried with the same key
	// after at least Policy.BusyWait.
	ClassBusy Class = "busy"

	// ClassOutcomeUnknown: the request may have executed and no answer says
	// how (a timeout or dropped connection after the request was written).
	// Retried only when the operation is replay-safe; makes the run
	// uncertain until a later answer settles it.
	ClassOutcomeUnknown Class = "outcome_unknown"

	// ClassUnknownFinal: the request may have executed and retrying cannot
	// tell how, because the processor stored this answer for the key (a 500
	// on a keyed write). Final: the result is pending, for reconciliation.
	ClassUnknownFinal Class = "unknown_final"

	// ClassStoredResult: the processor replayed a stored answer of an earlier
	// execution under this key (Idempotent-Replayed: true) that is neither a
	// success nor a decline, such as a stored 500. Final, never retried; the
	// result is pending. A replayed success or decline should be classified
	// ClassSuccess or ClassDecline: those settle the operation.
	ClassStoredResult Class = "stored_result"

	// ClassTerminal: the processor rejected the request as invalid (400
	// idempotency_error, other 4xx). Final: the result is failed with
	// CodeInvalidRequest, or pending if an earlier attempt may have executed.
	ClassTerminal Class = "terminal"
)

// Valid reports whether c is one of the defined classes. The loop treats an
// invalid class as ClassUnknownFinal: it neither retries nor claims failure
// for an answer it does not understand.
func (c Class) Valid() bool {
	switch c {
	case ClassSuccess, ClassDecline, ClassNotSent, ClassRetry, ClassRetryAfter, ClassBusy,
		ClassOutcomeUnknown, ClassUnknownFinal, ClassStoredResult, ClassTerminal:
		return true
	}
	return false
}

// Temporary reports whether another attempt may get a different answer:
// true for ClassNotSent, ClassRetry, ClassRetryAfter, ClassBusy and
// ClassOutcomeUnknown.
func (c Class) Temporary() bool {
	switch c {
	case ClassNotSent, ClassRetry, ClassRetryAfter, ClassBusy, ClassOutcomeUnknown:
		return true
	}
	return false
}

// Executed reports whether the class by itself means the request may have
// taken effect at the processor: ClassOutcomeUnknown, ClassUnknownFinal and
// ClassStoredResult. Other classes rely on Outcome.MaybeExecuted.
func (c Class) Executed() bool {
	switch c {
	case ClassOutcomeUnknown, ClassUnknownFinal, ClassStoredResult:
		return true
	}
	return false
}

// Health is what an attempt's outcome says about the processor's health, as
// counted by a Breaker.
type Health int8

// The health verdicts.
const (
	// HealthNeutral: says nothing about the processor (a 4xx, a rate limit,
	// a busy key, a replayed answer, a cancelled attempt). Not counted.
	HealthNeutral Health = iota
	// HealthOK: the processor answered properly (a success or a decline).
	HealthOK
	// HealthFailure: a processor-health failure (5xx, timeout, refusal).
	HealthFailure
)

// String returns "neutral", "ok" or "failure".
func (h Health) String() string {
	switch h {
	case HealthOK:
		return "ok"
	case HealthFailure:
		return "failure"
	default:
		return "neutral"
	}
}

// Health returns what the class says about the processor's health (the loop
// refines it with the answer's status, see healthOf). Only refusals, 5xx
// answers and timeouts count as failures; declines count as
// healthy answers, so a wave of declines (a card-testing attack) can never
// open a breaker; other 4xx answers, rate limits and busy keys are neutral.
func (c Class) Health() Health {
	switch c {
	case ClassSuccess, ClassDecline:
		return HealthOK
	case ClassNotSent, ClassRetry, ClassOutcomeUnknown, ClassUnknownFinal:
		return HealthFailure
	default:
		return HealthNeutral
	}
}

// healthOf is what an attempt says of the processor's health: its class's, except that an
// unknown outcome answered with a 2xx status — a payment the processor holds in processing,
// or waiting for the cardholder's authentication (3-D Secure) — is a healthy answer. Only a
// processor that fails to answer properly may open a breaker; a run of cards that ask for
// authentication must not stop every charge of the account.
func healthOf(c Class, httpStatus int) Health {
	if c == ClassUnknownFinal && httpStatus >= 200 && httpStatus < 300 {
		return HealthOK
	}
	return c.Health()
}

// Outcome is what one attempt produced, as the caller's classifier reports
// it. The loop needs nothing else from the response.
type Outcome struct {
	// Class is the meaning of the outcome.
	Class Class

	// MaybeExecuted reports that the request may have reached the processor
	// and taken effect even though the answer does not say so: a gateway 502
	// or 504, or any failure after the request was written. Leave it false
	// only when the evidence proves nothing happened (a refusal before
	// sending, a 503 or 429 answered before execution). Classes whose
	// Executed method returns true imply it.
	MaybeExecuted bool

	// HTTPStatus is the response status, or 0 when there was no response.
	HTTPStatus int

	// ProcessorCode is the processor's error or decline code, if any. It is
	// recorded in the report and must not contain secrets.
	ProcessorCode string

	// RetryAfter is the raw Retry-After header value, if any; the loop
	// parses it with ParseRetryAfter. An invalid value is recorded and
	// ignored: the loop falls back to backoff.
	RetryAfter string

	// Date is the raw Date header of the response, if any; it corrects
	// clock skew for an HTTP-date Retry-After.
	Date string

	// Canceled reports that the attempt ended because the operation was
	// cancelled (its context ended), not because of the processor. Do sets
	// it; a simulator sets it to model a caller that hangs up. It does not
	// override a settling answer (success, decline, final classes).
	Canceled bool
}

// maybeExecuted reports whether the outcome may have taken effect.
func (o Outcome) maybeExecuted() bool {
	return o.MaybeExecuted || o.Class.Executed()
}
