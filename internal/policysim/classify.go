package policysim

import (
	"github.com/paygate/paygate/processor"
	"github.com/paygate/paygate/retry"
)

// Classify turns a scripted answer into the outcome the retry loop acts on: the gateway's
// processor adapter classifies it (processor.ClassifyWrite, or processor.ClassifyRead for a
// read) as the answer the step stands for (Step.Answer).
func Classify(s Step, read bool) retry.Outcome {
	if read {
		return processor.ClassifyRead(s.Answer())
	}
	return processor.ClassifyWrite(s.Answer())
}

// Answer is the processor's answer a step stands for, in Stripe's terms:
//
//	refused        no answer, the request not written (connection_refused)
//	timeout        no answer, the request written (timeout)
//	dropped        no answer, the request written (connection_closed)
//	2xx            a PaymentIntent that succeeded
//	3xx            a body that is not the processor's JSON (a proxy's page)
//	4xx, 5xx       Stripe's error: a card_error for 402 or a 4xx with a decline body_code
//	               (code the body_code if it is a card error code, else card_declined with
//	               the body_code as decline_code), an idempotency_error for the body_code
//	               idempotency_error, an api_error for a 5xx, else an invalid_request_error;
//	               its code is the body_code
//
// retry_after and date are the headers Retry-After and Date, should_retry is
// Stripe-Should-Retry and replayed Idempotent-Replayed: true.
func (s Step) Answer() processor.Answer {
	switch {
	case s.Refused:
		return processor.Answer{Failure: "connection_refused"}
	case s.Timeout:
		return processor.Answer{Failure: "timeout", Written: true}
	case s.Dropped:
		return processor.Answer{Failure: "connection_closed", Written: true}
	}
	a := processor.Answer{Status: s.Status, ShouldRetry: s.ShouldRetry, Replayed: s.Replayed,
		RetryAfter: s.RetryAfter, Date: s.Date}
	switch {
	case s.Status < 300:
		a.Intent = "succeeded"
	case s.Status < 400:
		a.Unparsed = true
	case declined(s):
		a.ErrorType, a.Code = "card_error", cardErrorCode(s)
		if a.Code != s.BodyCode {
			a.DeclineCode = s.BodyCode
		}
	default:
		a.Code = s.BodyCode
		switch {
		case s.BodyCode == "idempotency_error":
			a.ErrorType = "idempotency_error"
		case s.Status >= 500:
			a.ErrorType = "api_error"
		default:
			a.ErrorType = "invalid_request_error"
		}
	}
	return a
}

// declined reports whether an error answer is a card decline: a 402, or a 4xx whose
// body_code is a decline code (both are card_error on the wire).
func declined(s Step) bool {
	return s.Status == 402 ||
		s.Status >= 400 && s.Status < 500 && (cardErrorCodes[s.BodyCode] || declineCodes[s.BodyCode])
}

// cardErrorCodes are Stripe's error codes of a card_error; declineCodes are its decline
// codes, which come with the code card_declined. A body_code of either kind makes a 4xx a
// decline.
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

// cardErrorCode returns the error code of a decline's card_error: the body_code when it is
// a card_error code, else card_declined (the body_code, if any, is then the decline_code).
func cardErrorCode(s Step) string {
	if cardErrorCodes[s.BodyCode] {
		return s.BodyCode
	}
	return "card_declined"
}
