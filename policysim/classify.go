package policysim

import (
	"github.com/paygate/paygate/retry"
)

// Classify turns a scripted answer into the outcome the retry loop acts on,
// with the gateway's classification table (the processor adapter's):
//
//	answer                                         class
//	refused                                        not_sent
//	timeout, dropped (a write)                     outcome_unknown (may have executed)
//	2xx                                            success
//	402, or a 4xx with a decline body_code         decline
//	replayed 4xx (not 409, 429) / other replayed   terminal / stored_result
//	should_retry true / false                      retry / terminal (500: unknown_final)
//	409 idempotency_key_in_use, 429 lock_timeout   busy (may have executed)
//	429                                            retry_after
//	500 (a write)                                  unknown_final
//	503                                            retry (not executed)
//	502, 504, other 5xx                            retry (may have executed)
//	400 idempotency_error                          terminal (may have executed)
//	3xx (an answer of unknown shape, a write)      outcome_unknown
//	other 4xx                                      terminal
//
// A read (read true) has no effect to be uncertain about: its timeouts,
// dropped connections, 500s and unknown answers are plain retries, and
// nothing it gets may have executed. s.Date is sent as the Date header when
// not empty.
func Classify(s Step, read bool) retry.Outcome {
	switch {
	case s.Refused:
		return retry.Outcome{Class: retry.ClassNotSent, ProcessorCode: "connection_refused"}
	case s.Timeout, s.Dropped:
		code := "timeout"
		if s.Dropped {
			code = "connection_closed"
		}
		if read {
			return retry.Outcome{Class: retry.ClassRetry, ProcessorCode: code}
		}
		return retry.Outcome{Class: retry.ClassOutcomeUnknown, MaybeExecuted: true, ProcessorCode: code}
	}
	out := retry.Outcome{HTTPStatus: s.Status, ProcessorCode: s.BodyCode, RetryAfter: s.RetryAfter, Date: s.Date}
	out.Class, out.MaybeExecuted = classifyAnswer(s, read)
	if read {
		out.MaybeExecuted = false
	}
	if out.Class == retry.ClassDecline && out.ProcessorCode == "" {
		out.ProcessorCode = "card_declined"
	}
	return out
}

// classifyAnswer classifies an HTTP answer; it reports the class and
// whether the request may have executed.
func classifyAnswer(s Step, read bool) (retry.Class, bool) {
	status := s.Status
	switch {
	case status >= 200 && status < 300:
		return retry.ClassSuccess, false
	case status == 402, status >= 400 && status < 500 && declineCodes[s.BodyCode]:
		return retry.ClassDecline, false
	case s.Replayed && !read:
		// A stored answer for the key: final.
		if status >= 400 && status < 500 && status != 409 && status != 429 {
			return retry.ClassTerminal, false
		}
		return retry.ClassStoredResult, true
	}
	switch s.ShouldRetry {
	case "true":
		return retry.ClassRetry, status >= 500 && status != 503 || status == 409
	case "false":
		if status == 500 && !read {
			return retry.ClassUnknownFinal, true
		}
		return retry.ClassTerminal, status >= 500
	}
	switch {
	case status == 409 && s.BodyCode == "idempotency_key_in_use",
		status == 429 && s.BodyCode == "lock_timeout":
		// Another request under the key is running at the processor.
		return retry.ClassBusy, true
	case status == 429:
		return retry.ClassRetryAfter, false
	case status == 500 && !read:
		return retry.ClassUnknownFinal, true
	case status == 503:
		return retry.ClassRetry, false
	case status >= 500:
		return retry.ClassRetry, true
	case status == 400 && s.BodyCode == "idempotency_error":
		// The key was used with other parameters: an execution exists.
		return retry.ClassTerminal, true
	case status < 400:
		// Not the processor's answer shape.
		if read {
			return retry.ClassRetry, false
		}
		return retry.ClassOutcomeUnknown, true
	}
	return retry.ClassTerminal, false
}

// declineCodes are the body codes of a card decline: Stripe's card_error
// codes and its decline codes.
var declineCodes = map[string]bool{
	// card_error codes
	"card_declined": true, "expired_card": true, "incorrect_cvc": true, "incorrect_number": true,
	"incorrect_zip": true, "invalid_cvc": true, "invalid_expiry_month": true, "invalid_expiry_year": true,
	"invalid_number": true, "processing_error": true, "authentication_required": true,
	"card_decline_rate_limit_exceeded": true,
	// decline codes
	"insufficient_funds": true, "lost_card": true, "stolen_card": true, "pickup_card": true,
	"do_not_honor": true, "generic_decline": true, "do_not_try_again": true, "fraudulent": true,
	"card_velocity_exceeded": true, "issuer_not_available": true, "try_again_later": true,
	"invalid_account": true, "revocation_of_authorization": true, "stop_payment_order": true,
	"withdrawal_count_limit_exceeded": true, "transaction_not_allowed": true,
	"previously_declined_do_not_retry": true,
}
