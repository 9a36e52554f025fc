package processor

import (
	"net/http"

	"github.com/paygate/paygate/retry"
)

// Answer is what the classification reads of the processor's answer to one request, in
// Stripe's terms: whether the request was written when no answer came, else the answer's
// status, headers and, for an error, its type and codes. The adapter builds it from the wire;
// the retry-policy simulator (paygate simulate) from a scripted step, so that both classify
// an answer by the one table of ClassifyWrite and ClassifyRead.
type Answer struct {
	// Status is the answer's HTTP status; 0 when no answer came.
	Status int
	// Failure names why no answer came (connection_refused, timeout, connection_closed, ...),
	// and Written says whether the request had been written in full by then.
	Failure string
	Written bool
	// Writes counts how often the request was written (the transport re-sends a request on
	// a fresh connection when a reused one fails before answering); 0 or 1 for once.
	Writes int
	// Unparsed reports an answer whose body is not the processor's JSON (a proxy's page).
	Unparsed bool
	// Intent is the status of the PaymentIntent a 2xx answer carried, and IntentError
	// reports that it carried a last_payment_error (ErrorType and the codes are then its).
	Intent      string
	IntentError bool
	// ErrorType, Code and DeclineCode are the error's type (card_error, idempotency_error,
	// invalid_request_error, api_error, ...), code and decline_code.
	ErrorType   string
	Code        string
	DeclineCode string
	// ShouldRetry is the Stripe-Should-Retry header ("true", "false" or empty); Replayed
	// reports Idempotent-Replayed: true (the answer stored for the key).
	ShouldRetry string
	Replayed    bool
	// RetryAfter and Date are the headers, passed on as they came.
	RetryAfter string
	Date       string
}

const errorTypeCard = "card_error"

// declined reports whether an error answer is the issuer's refusal: a card_error, or a 402.
func (a Answer) declined() bool {
	return a.ErrorType == errorTypeCard || a.Status == http.StatusPaymentRequired
}

// declineCode is the code a decline is recorded with: the most specific one.
func (a Answer) declineCode() string {
	if a.DeclineCode != "" {
		return a.DeclineCode
	}
	return a.Code
}

// notFound reports the processor's definite answer that an object does not exist.
func (a Answer) notFound() bool {
	return a.Status == http.StatusNotFound && a.Code == "resource_missing"
}

// ClassifyWrite classifies the answer to a keyed write (create and confirm), for the retry
// loop:
//
//	answer                                           class
//	none, the request not written                    not_sent
//	none, the request written                        outcome_unknown (may have executed)
//	not the processor's JSON: 503, 429 / 502, 504    retry / retry (may have executed)
//	not the processor's JSON, other                  outcome_unknown (may have executed)
//	a PaymentIntent: succeeded                       success
//	requires_payment_method, with a card_error       decline
//	requires_payment_method, other error or none     unknown_final
//	canceled                                         terminal (payment_intent_canceled)
//	processing, requires_action, ...                 unknown_final
//	402, or a card_error                             decline
//	replayed 4xx (not 409, 424, 429) / other         terminal / stored_result
//	401, 403 (the gateway's own key refused)         retry (nothing ran), whatever should_retry says
//	should_retry true                                retry (busy for 409 and 429 lock_timeout);
//	                                                 may have executed for 409, 424,
//	                                                 idempotency_error, 5xx but 503
//	should_retry false                               500, 424: unknown_final; else terminal, may
//	                                                 have executed for 409, 429 lock_timeout,
//	                                                 idempotency_error, 5xx
//	409 (any code), 429 lock_timeout                 busy (may have executed)
//	429                                              retry_after
//	500, 424 (Stripe's failed external dependency)   unknown_final
//	503                                              retry (not executed)
//	502, 504, other 5xx                              retry (may have executed)
//	4xx idempotency_error                            terminal (may have executed)
//	other 4xx                                        terminal
//
// An answer describes the last write only: when the request was written more than once, an
// earlier write may have executed whatever the last one was told, unless the answer settles
// the operation under the key (a PaymentIntent, a decline).
//
// The processor code is the error's (a decline's decline_code when it has one;
// processor_authentication_failed for a 401 or 403 without one; idempotency_error for an
// idempotency_error), the PaymentIntent's status or last_payment_error_TYPE, or for an
// answer that did not come the failure; unparsable_response for a body that is not JSON.
func ClassifyWrite(a Answer) retry.Outcome {
	out := classifyLastWrite(a)
	settles := a.Intent != "" || out.Class == retry.ClassSuccess || out.Class == retry.ClassDecline
	if a.Writes > 1 && !settles {
		out.MaybeExecuted = true
	}
	return out
}

// classifyLastWrite classifies the answer to the last write of a keyed write.
func classifyLastWrite(a Answer) retry.Outcome {
	switch {
	case a.Status == 0:
		if a.Written {
			// Written in full: the processor may have executed it (a timeout after send, a
			// dropped connection).
			return retry.Outcome{Class: retry.ClassOutcomeUnknown, MaybeExecuted: true, ProcessorCode: a.Failure}
		}
		// Never written: a refused connection, a DNS failure, a failed write.
		return retry.Outcome{Class: retry.ClassNotSent, ProcessorCode: a.Failure}
	case a.Unparsed:
		return classifyUnparsed(a)
	case a.Intent != "":
		return classifyIntent(a)
	}
	return classifyWriteError(a)
}

// classifyUnparsed classifies an answer whose body was not the processor's JSON.
func classifyUnparsed(a Answer) retry.Outcome {
	out := retry.Outcome{HTTPStatus: a.Status, RetryAfter: a.RetryAfter, Date: a.Date, ProcessorCode: "unparsable_response"}
	switch a.Status {
	case http.StatusServiceUnavailable, http.StatusTooManyRequests:
		out.Class = retry.ClassRetry
	case http.StatusBadGateway, http.StatusGatewayTimeout:
		out.Class, out.MaybeExecuted = retry.ClassRetry, true
	default:
		// A write whose answer cannot be read may have executed.
		out.Class, out.MaybeExecuted = retry.ClassOutcomeUnknown, true
	}
	return out
}

// classifyIntent classifies a 2xx answer carrying a PaymentIntent.
func classifyIntent(a Answer) retry.Outcome {
	out := retry.Outcome{HTTPStatus: a.Status}
	switch a.Intent {
	case "succeeded":
		out.Class = retry.ClassSuccess
	case "requires_payment_method":
		switch {
		case a.IntentError && a.ErrorType == errorTypeCard:
			out.Class, out.ProcessorCode = retry.ClassDecline, a.declineCode()
		case a.IntentError:
			// An error that is not the issuer's (an api_error, an idempotency_error, an
			// invalid_request_error): no decline, and no card attempt to count. What the
			// payment became is unknown, and the key would only replay this answer.
			out.Class, out.ProcessorCode = retry.ClassUnknownFinal, "last_payment_error"
			if a.ErrorType != "" {
				out.ProcessorCode += "_" + a.ErrorType
			}
		default:
			// A PaymentIntent waiting for a payment method without an error: nothing to
			// settle it by retrying.
			out.Class, out.ProcessorCode = retry.ClassUnknownFinal, a.Intent
		}
	case "canceled":
		// Canceled: no money moved, and the key would only replay this answer.
		out.Class, out.ProcessorCode = retry.ClassTerminal, "payment_intent_canceled"
	default:
		// processing, requires_action, requires_capture, requires_confirmation: the outcome
		// is not known yet; reconciliation follows it.
		out.Class, out.ProcessorCode = retry.ClassUnknownFinal, a.Intent
	}
	return out
}

// classifyWriteError classifies an error answer to a write.
func classifyWriteError(a Answer) retry.Outcome {
	status := a.Status
	out := retry.Outcome{HTTPStatus: status, ProcessorCode: a.Code, RetryAfter: a.RetryAfter, Date: a.Date}
	if a.declined() {
		out.Class, out.ProcessorCode = retry.ClassDecline, a.declineCode()
		return out
	}
	// Stripe's 424: a dependency outside the processor failed while the request ran. Never
	// the caller's invalid request: on a keyed write the outcome is unknown, as after a 500.
	dependency := status == http.StatusFailedDependency
	if a.Replayed {
		// A stored answer for our key: final. A stored 4xx says the first execution was
		// refused as invalid; any other stored error leaves the outcome unknown.
		out.Class = retry.ClassStoredResult
		if status >= 400 && status < 500 && status != http.StatusConflict && status != http.StatusTooManyRequests && !dependency {
			out.Class = retry.ClassTerminal
		}
		return out
	}
	if status == http.StatusUnauthorized || status == http.StatusForbidden {
		// The processor refused our own credentials before doing anything: nothing ran, and
		// the account stays unusable until its key is fixed. Not the caller's invalid
		// request: a processor outage, which the breaker and the budget contain and the
		// caller may retry later under the same key (whatever Stripe-Should-Retry says).
		out.Class = retry.ClassRetry
		if out.ProcessorCode == "" {
			out.ProcessorCode = "processor_authentication_failed"
		}
		return out
	}
	// Stripe's only 409 is a concurrent request under the same key (idempotency_key_in_use,
	// with or without the code): it may execute.
	busy := status == http.StatusConflict || status == http.StatusTooManyRequests && a.Code == "lock_timeout"
	// Our key was used with other parameters: an execution exists under it.
	idempotency := a.ErrorType == "idempotency_error" || status == http.StatusBadRequest && a.Code == "idempotency_error"
	if idempotency && !busy {
		out.ProcessorCode = "idempotency_error"
	}
	// Stripe-Should-Retry overrides whether to retry, never the evidence that a request
	// under our key may have executed.
	switch a.ShouldRetry {
	case "true":
		out.Class = retry.ClassRetry
		out.MaybeExecuted = maybeExecutedByStatus(status) || idempotency || dependency
		if busy {
			// Another request under our key is running at the processor: retry after the
			// short wait, and it may execute meanwhile.
			out.Class, out.MaybeExecuted = retry.ClassBusy, true
		}
		return out
	case "false":
		if status == http.StatusInternalServerError || dependency {
			out.Class = retry.ClassUnknownFinal
		} else {
			out.Class = retry.ClassTerminal
			out.MaybeExecuted = status >= 500 || busy || idempotency
		}
		return out
	}
	switch {
	case busy:
		// Another request under our key is running at the processor: it may execute.
		out.Class, out.MaybeExecuted = retry.ClassBusy, true
	case status == http.StatusTooManyRequests:
		out.Class = retry.ClassRetryAfter
	case status == http.StatusInternalServerError, dependency:
		out.Class = retry.ClassUnknownFinal
	case status == http.StatusServiceUnavailable:
		out.Class = retry.ClassRetry
	case status >= 500:
		out.Class, out.MaybeExecuted = retry.ClassRetry, true
	case idempotency:
		// A bug, surfaced loudly; the outcome stays unknown.
		out.Class, out.MaybeExecuted = retry.ClassTerminal, true
	default:
		out.Class = retry.ClassTerminal
	}
	return out
}

func maybeExecutedByStatus(status int) bool {
	switch status {
	case http.StatusServiceUnavailable, http.StatusTooManyRequests:
		return false
	}
	return status >= 500 || status == http.StatusConflict
}

// ClassifyRead classifies the answer to a read (retrieve, list, search). A read has no
// effect to be uncertain about, and nothing it gets may have executed:
//
//	answer                                           class
//	none, not the processor's JSON                   retry
//	2xx, 404 resource_missing (definitely absent)    success
//	should_retry true / false                        retry / terminal
//	429                                              retry_after
//	409, 424, 5xx                                    retry
//	other 4xx (402 included)                         terminal
//
// The processor code is the error's code, or for an answer that did not come the failure
// (canceled also sets Outcome.Canceled); unparsable_response for a body that is not JSON.
func ClassifyRead(a Answer) retry.Outcome {
	out := retry.Outcome{HTTPStatus: a.Status, ProcessorCode: a.Code, RetryAfter: a.RetryAfter, Date: a.Date}
	switch {
	case a.Status == 0:
		return retry.Outcome{Class: retry.ClassRetry, ProcessorCode: a.Failure, Canceled: a.Failure == "canceled"}
	case a.Unparsed:
		// An answer stripe-go could not parse (a proxy's page, a truncated body): a read is
		// safe to repeat.
		out.Class, out.ProcessorCode = retry.ClassRetry, "unparsable_response"
	case a.Status < 300:
		out.Class, out.ProcessorCode = retry.ClassSuccess, ""
	case a.notFound():
		out.Class = retry.ClassSuccess // the object definitely does not exist: an answer
	case a.ShouldRetry == "true":
		out.Class = retry.ClassRetry
	case a.ShouldRetry == "false":
		out.Class = retry.ClassTerminal
	case a.Status == http.StatusTooManyRequests:
		out.Class = retry.ClassRetryAfter
	case a.Status == http.StatusConflict || a.Status == http.StatusFailedDependency || a.Status >= 500:
		// A 424: a dependency outside the processor failed; a read is safe to repeat.
		out.Class = retry.ClassRetry
	default:
		out.Class = retry.ClassTerminal
	}
	return out
}
