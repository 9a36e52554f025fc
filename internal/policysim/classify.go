package policysim

import (
	"github.com/paygate/paygate/retry"
)

// Classify turns a scripted answer into the outcome the retry loop acts on,
// exactly as the gateway's processor adapter (package processor) classifies
// the same answer on the wire, a write like CreatePayment and a read (read
// true) like Retrieve. A write:
//
//	answer                                           class
//	refused                                          not_sent
//	timeout, dropped                                 outcome_unknown (may have executed)
//	2xx                                              success
//	3xx (not the processor's JSON)                   outcome_unknown (may have executed)
//	402, or a 4xx with a decline body_code           decline
//	replayed 4xx (not 409, 424, 429) / other         terminal / stored_result (may have executed)
//	401, 403 (the gateway's own key refused)         retry (nothing ran), whatever should_retry says
//	should_retry true                                retry (busy for 409 and 429 lock_timeout);
//	                                                 may have executed for 409, 424,
//	                                                 idempotency_error, 5xx but 503
//	should_retry false                               500, 424: unknown_final; else terminal, may
//	                                                 have executed for 409, 429 lock_timeout,
//	                                                 idempotency_error, 5xx
//	409 (any body_code), 429 lock_timeout            busy (may have executed)
//	429                                              retry_after
//	500, 424 (Stripe's failed external dependency)   unknown_final (may have executed)
//	503                                              retry (not executed)
//	502, 504, other 5xx                              retry (may have executed)
//	4xx idempotency_error                            terminal (may have executed)
//	other 4xx                                        terminal
//
// A 409 is the processor's answer to a concurrent request under the same
// key: the earlier request may be executing, so the loop retries under the
// key after Policy.BusyWait, and an operation whose loop ends there (its
// deadline, budget or attempts spent) is pending, never failed.
//
// A read has no effect to be uncertain about, and nothing it gets may have
// executed:
//
//	answer                                           class
//	refused, timeout, dropped, 3xx                   retry
//	2xx, 404 resource_missing (definitely absent)    success
//	should_retry true / false                        retry / terminal
//	429                                              retry_after
//	409, 424, 5xx                                    retry
//	other 4xx (402 included)                         terminal
//
// The processor code is the body_code (card_declined for a decline without
// one, processor_authentication_failed for a write's 401 or 403 without one,
// idempotency_error for a write's idempotency_error, none for a 2xx),
// or for an answer that did not come the failure: connection_refused,
// timeout, connection_closed; unparsable_response for a 3xx. s.Date is sent
// as the Date header when not empty.
func Classify(s Step, read bool) retry.Outcome {
	if read {
		return classifyRead(s)
	}
	switch {
	case s.Refused:
		return retry.Outcome{Class: retry.ClassNotSent, ProcessorCode: "connection_refused"}
	case s.Timeout:
		return retry.Outcome{Class: retry.ClassOutcomeUnknown, MaybeExecuted: true, ProcessorCode: "timeout"}
	case s.Dropped:
		return retry.Outcome{Class: retry.ClassOutcomeUnknown, MaybeExecuted: true, ProcessorCode: "connection_closed"}
	}
	out := retry.Outcome{HTTPStatus: s.Status, ProcessorCode: s.BodyCode, RetryAfter: s.RetryAfter, Date: s.Date}
	switch {
	case s.Status < 300:
		out.Class, out.ProcessorCode = retry.ClassSuccess, ""
	case s.Status < 400:
		// Not the processor's answer: a write whose answer cannot be read may
		// have executed.
		out.Class, out.MaybeExecuted, out.ProcessorCode = retry.ClassOutcomeUnknown, true, "unparsable_response"
	case declined(s):
		out.Class = retry.ClassDecline
		if out.ProcessorCode == "" {
			out.ProcessorCode = "card_declined"
		}
	case !s.Replayed && (s.Status == 401 || s.Status == 403):
		// The processor refused the gateway's own key before doing anything:
		// nothing ran, and the account stays unusable until the key is fixed.
		// A processor outage, not the caller's invalid request, whatever
		// Stripe-Should-Retry says.
		out.Class = retry.ClassRetry
		if out.ProcessorCode == "" {
			out.ProcessorCode = "processor_authentication_failed"
		}
	default:
		out.Class, out.MaybeExecuted = classifyWriteError(s)
		if s.BodyCode == "idempotency_error" && !busy(s) {
			out.ProcessorCode = "idempotency_error"
		}
	}
	return out
}

// declined reports whether an error answer is a card decline: a 402, or a
// 4xx whose body_code is a decline code (both are card_error on the wire).
func declined(s Step) bool {
	return s.Status == 402 ||
		s.Status >= 400 && s.Status < 500 && (cardErrorCodes[s.BodyCode] || declineCodes[s.BodyCode])
}

// busy reports whether an error answer says that another request under the
// same key is running at the processor: any 409, or a 429 lock_timeout.
func busy(s Step) bool {
	return s.Status == 409 || s.Status == 429 && s.BodyCode == "lock_timeout"
}

// classifyWriteError classifies an error answer (4xx, 5xx) to a write that
// is not a decline, as processor's classifyStripeError does; it reports the
// class and whether the request may have executed.
func classifyWriteError(s Step) (retry.Class, bool) {
	status := s.Status
	if s.Replayed {
		// A stored answer for the key: final. A stored 4xx says the first
		// execution was refused as invalid; any other leaves the outcome
		// unknown.
		if status < 500 && status != 409 && status != 424 && status != 429 {
			return retry.ClassTerminal, false
		}
		return retry.ClassStoredResult, true
	}
	inUse := busy(s)
	// The key was used with other parameters: an execution exists under it.
	idempotency := s.BodyCode == "idempotency_error"
	// A dependency outside the processor failed while the request ran: the outcome is
	// unknown, as after a 500, never an invalid request.
	dependency := status == 424
	// Stripe-Should-Retry overrides whether to retry, never the evidence
	// that a request under the key may have executed.
	switch s.ShouldRetry {
	case "true":
		if inUse {
			return retry.ClassBusy, true
		}
		return retry.ClassRetry, status >= 500 && status != 503 || idempotency || dependency
	case "false":
		if status == 500 || dependency {
			return retry.ClassUnknownFinal, true
		}
		return retry.ClassTerminal, status >= 500 || inUse || idempotency
	}
	switch {
	case inUse:
		return retry.ClassBusy, true
	case status == 429:
		return retry.ClassRetryAfter, false
	case status == 500, dependency:
		return retry.ClassUnknownFinal, true
	case status == 503:
		return retry.ClassRetry, false
	case status >= 500:
		return retry.ClassRetry, true
	case idempotency:
		// A bug, surfaced loudly; the outcome stays unknown.
		return retry.ClassTerminal, true
	}
	return retry.ClassTerminal, false
}

// classifyRead classifies the answer to a read, as processor's classifyRead
// does: nothing a read gets may have executed.
func classifyRead(s Step) retry.Outcome {
	switch {
	case s.Refused:
		return retry.Outcome{Class: retry.ClassRetry, ProcessorCode: "connection_refused"}
	case s.Timeout:
		return retry.Outcome{Class: retry.ClassRetry, ProcessorCode: "timeout"}
	case s.Dropped:
		return retry.Outcome{Class: retry.ClassRetry, ProcessorCode: "connection_closed"}
	}
	out := retry.Outcome{HTTPStatus: s.Status, ProcessorCode: s.BodyCode, RetryAfter: s.RetryAfter, Date: s.Date}
	if declined(s) {
		// A read knows no declines: a card_error is classified by its
		// status, and its code is the card_error's.
		out.ProcessorCode = cardErrorCode(s)
	}
	status := s.Status
	switch {
	case status < 300:
		out.Class, out.ProcessorCode = retry.ClassSuccess, ""
	case status < 400:
		out.Class, out.ProcessorCode = retry.ClassRetry, "unparsable_response"
	case status == 404 && s.BodyCode == "resource_missing":
		out.Class = retry.ClassSuccess // the object definitely does not exist: an answer
	case s.ShouldRetry == "true":
		out.Class = retry.ClassRetry
	case s.ShouldRetry == "false":
		out.Class = retry.ClassTerminal
	case status == 429:
		out.Class = retry.ClassRetryAfter
	case status == 409 || status == 424 || status >= 500:
		out.Class = retry.ClassRetry
	default:
		out.Class = retry.ClassTerminal
	}
	return out
}

// cardErrorCodes are Stripe's error codes of a card_error; declineCodes
// are its decline codes, which come with the code card_declined. A body_code
// of either kind makes a 4xx a decline.
var (
	cardErrorCodes = map[string]bool{
		"card_declined": true, "expired_card": true, "incorrect_cvc": true, "incorrect_number": true,
		"incorrect_zip": true, "incorrect_address": true, "invalid_cvc": true, "invalid_expiry_month": true,
		"invalid_expiry_year": true, "invalid_number": true, "processing_error": true,
		"authentication_required": true, "card_decline_rate_limit_exceeded": true,
	}
	declineCodes = map[string]bool{
		"insufficient_funds": true, "lost_card": true, "stolen_card": true, "pickup_card": true,
		"do_not_honor": true, "generic_decline": true, "do_not_try_again": true, "fraudulent": true,
		"card_velocity_exceeded": true, "issuer_not_available": true, "try_again_later": true,
		"invalid_account": true, "revocation_of_authorization": true, "stop_payment_order": true,
		"withdrawal_count_limit_exceeded": true, "transaction_not_allowed": true,
		"previously_declined_do_not_retry": true, "authentication_not_handled": true,
		"mobile_device_authentication_required": true, "duplicate_transaction": true,
		"pin_try_exceeded": true, "currency_not_supported": true, "card_not_supported": true,
		"restricted_card": true,
	}
)

// cardErrorCode returns the error code of a decline's card_error: the
// body_code when it is a card_error code, else card_declined (the body_code,
// if any, is then the decline_code).
func cardErrorCode(s Step) string {
	if cardErrorCodes[s.BodyCode] {
		return s.BodyCode
	}
	return "card_declined"
}
