package processor

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/stripe/stripe-go/v76"

	"github.com/paygate/paygate/retry"
)

// Attempt is one classified processor attempt.
type Attempt struct {
	// Outcome is the classification the retry loop acts on.
	Outcome retry.Outcome
	// PaymentIntent is the PaymentIntent id when the answer carried one (a success, a
	// pending status, or a decline's error.payment_intent).
	PaymentIntent string
	// Status is the PaymentIntent's status when one came back.
	Status string
	// Decline is the issuer's evidence for a decline.
	Decline *Decline
	// RequestID is the processor's Request-Id of the answer.
	RequestID string
	// Replayed is true when the processor replayed a stored answer for the key.
	Replayed bool
	// Writes counts how often the request was written (Go's transport re-sends a request
	// on a fresh connection when a reused one fails before answering). Above 1, the
	// Outcome says the attempt may have executed unless its answer settled the operation.
	Writes int
	// FreshConn is true when a connection was dialed for the request: the process behind
	// the processor's address may have changed since the last request (and with it the
	// account), without any request failing.
	FreshConn bool
	// Err is the underlying error, for logs; it carries no secret.
	Err error
}

// Decline is the issuer's evidence for a declined payment, every code the processor gave.
type Decline struct {
	// Code is Stripe's error code (card_declined, expired_card, incorrect_cvc, ...).
	Code string `json:"code,omitempty"`
	// DeclineCode is Stripe's decline_code (insufficient_funds, lost_card, ...).
	DeclineCode string `json:"decline_code,omitempty"`
	// AdviceCode is Stripe's advice_code (do_not_try_again, try_again_later, confirm_card_data).
	AdviceCode string `json:"advice_code,omitempty"`
	// NetworkDeclineCode is the card network's own response code (Visa "05", ...).
	NetworkDeclineCode string `json:"network_decline_code,omitempty"`
	// NetworkAdviceCode is the network's advice (Mastercard Merchant Advice Code "03", ...).
	NetworkAdviceCode string `json:"network_advice_code,omitempty"`
	// Message is the processor's message for people.
	Message string `json:"message,omitempty"`
}

// response is what the wire showed of one request.
type response struct {
	ctxErr error       // the attempt's context error, if it ended
	wrote  bool        // the request was written at least once
	writes int         // how often it was written (2: the transport re-sent it)
	status int         // 0 when no response arrived
	header http.Header // nil when no response arrived
}

// newerErrorFields are the error fields stripe-go v76 does not decode.
type newerErrorFields struct {
	Error struct {
		AdviceCode         string `json:"advice_code"`
		NetworkAdviceCode  string `json:"network_advice_code"`
		NetworkDeclineCode string `json:"network_decline_code"`
	} `json:"error"`
}

func terminal(status int, code string) retry.Outcome {
	return retry.Outcome{Class: retry.ClassTerminal, HTTPStatus: status, ProcessorCode: code}
}

// classifyWrite classifies the answer to a keyed write (create and confirm).
//
// An answer describes the last write only. When the transport wrote the request more than
// once (it re-sends a request by itself on a fresh connection after a reused one failed,
// and a reset after the request arrived may hide an execution), an earlier write may have
// executed whatever the last one was told: the attempt may have executed unless its answer
// settles the operation under the key (a PaymentIntent, a decline). A 503 or 429 answered
// before execution, a 409, a 400 or a 5xx to the re-send says nothing of the first write.
func classifyWrite(r response, pi *intentAnswer, err error) Attempt {
	a := classifyAnswer(r, pi, err)
	if r.writes > 1 && !settles(a, pi, err) {
		a.Outcome.MaybeExecuted = true
	}
	return a
}

// classifyAnswer classifies the answer to the last write of a keyed write.
func classifyAnswer(r response, pi *intentAnswer, err error) Attempt {
	var se *stripe.Error
	switch {
	case err == nil && pi != nil:
		return classifyIntent(pi, headerOf(pi.LastResponse), pi.LastResponse)
	case errors.As(err, &se):
		return classifyStripeError(se)
	case r.status != 0:
		// An answer stripe-go could not parse: a proxy's HTML page, a truncated body.
		return classifyUnparsed(r, err)
	default:
		return classifyNetwork(r, err)
	}
}

// settles reports whether a classified answer is the operation's own result under its key,
// which no earlier write can contradict: the PaymentIntent the key created (in any status),
// or the issuer's decline.
func settles(a Attempt, pi *intentAnswer, err error) bool {
	switch {
	case err == nil && pi != nil:
		return true
	case a.Outcome.Class == retry.ClassSuccess, a.Outcome.Class == retry.ClassDecline:
		return true
	}
	return false
}

func headerOf(lr *stripe.APIResponse) http.Header {
	if lr == nil {
		return nil
	}
	return lr.Header
}

func requestIDOf(lr *stripe.APIResponse, h http.Header) string {
	if lr != nil && lr.RequestID != "" {
		return lr.RequestID
	}
	return h.Get("Request-Id")
}

// intentAnswer is what the classification reads of a PaymentIntent a write answered with:
// the processor's answer is decoded into it alone, not into the whole PaymentIntent (whose
// expanded objects a payment's answer never needs).
type intentAnswer struct {
	stripe.APIResource
	ID               string                     `json:"id"`
	Status           stripe.PaymentIntentStatus `json:"status"`
	LastPaymentError *stripe.Error              `json:"last_payment_error"`
}

// answerOf is the intentAnswer of a PaymentIntent decoded whole; nil for none.
func answerOf(pi *stripe.PaymentIntent) *intentAnswer {
	if pi == nil {
		return nil
	}
	return &intentAnswer{APIResource: pi.APIResource, ID: pi.ID, Status: pi.Status, LastPaymentError: pi.LastPaymentError}
}

// classifyIntent classifies a 2xx answer carrying a PaymentIntent.
func classifyIntent(pi *intentAnswer, h http.Header, lr *stripe.APIResponse) Attempt {
	status := http.StatusOK
	if lr != nil && lr.StatusCode != 0 {
		status = lr.StatusCode
	}
	a := Attempt{PaymentIntent: pi.ID, Status: string(pi.Status), RequestID: requestIDOf(lr, h),
		Replayed: h.Get("Idempotent-Replayed") == "true"}
	out := retry.Outcome{HTTPStatus: status}
	switch pi.Status {
	case stripe.PaymentIntentStatusSucceeded:
		out.Class = retry.ClassSuccess
	case stripe.PaymentIntentStatusRequiresPaymentMethod:
		switch le := pi.LastPaymentError; {
		case isCardError(le):
			out.Class = retry.ClassDecline
			var raw []byte
			if lr != nil {
				raw = lr.RawJSON
			}
			a.Decline = declineOf(le, lastPaymentErrorOf(raw))
			out.ProcessorCode = a.Decline.codeForReport()
		case le != nil:
			// An error that is not the issuer's (an api_error, an idempotency_error, an
			// invalid_request_error): no decline, and no card attempt to count. What the
			// payment became is unknown, and the key would only replay this answer.
			out.Class = retry.ClassUnknownFinal
			out.ProcessorCode = "last_payment_error_" + string(le.Type)
			if le.Type == "" {
				out.ProcessorCode = "last_payment_error"
			}
		default:
			// A PaymentIntent waiting for a payment method without an error: nothing to
			// settle it by retrying.
			out.Class = retry.ClassUnknownFinal
			out.ProcessorCode = string(pi.Status)
		}
	case stripe.PaymentIntentStatusCanceled:
		// Canceled: no money moved, and the key would only replay this answer.
		out.Class = retry.ClassTerminal
		out.ProcessorCode = "payment_intent_canceled"
	default:
		// processing, requires_action, requires_capture, requires_confirmation: the
		// outcome is not known yet; reconciliation follows it.
		out.Class = retry.ClassUnknownFinal
		out.ProcessorCode = string(pi.Status)
	}
	a.Outcome = out
	return a
}

// isCardError reports whether a PaymentIntent's last_payment_error is the issuer's (or the
// card's) refusal: type card_error. Any other type there is not a decline.
func isCardError(le *stripe.Error) bool {
	return le != nil && le.Type == stripe.ErrorTypeCard
}

// classifyStripeError classifies an error answer stripe-go decoded.
func classifyStripeError(se *stripe.Error) Attempt {
	h := headerOf(se.LastResponse)
	status := se.HTTPStatusCode
	a := Attempt{RequestID: se.RequestID, Err: errors.New(redact(se.Msg)),
		Replayed: h.Get("Idempotent-Replayed") == "true"}
	if a.RequestID == "" {
		a.RequestID = h.Get("Request-Id")
	}
	if se.PaymentIntent != nil {
		a.PaymentIntent = se.PaymentIntent.ID
		a.Status = string(se.PaymentIntent.Status)
	}
	out := retry.Outcome{HTTPStatus: status, ProcessorCode: string(se.Code),
		RetryAfter: h.Get("Retry-After"), Date: h.Get("Date")}
	if se.Type == stripe.ErrorTypeCard || status == http.StatusPaymentRequired {
		var raw []byte
		if se.LastResponse != nil {
			raw = se.LastResponse.RawJSON
		}
		a.Decline = declineOf(se, raw)
		out.Class = retry.ClassDecline
		out.ProcessorCode = a.Decline.codeForReport()
		a.Outcome = out
		return a
	}
	// Stripe's 424: a dependency outside the processor failed while the request ran. Never
	// the caller's invalid request: on a keyed write the outcome is unknown, as after a 500.
	dependency := status == http.StatusFailedDependency
	if a.Replayed {
		// A stored answer for our key: final. A stored 4xx says the first execution was
		// refused as invalid; any other stored error leaves the outcome unknown.
		if status >= 400 && status < 500 && status != http.StatusConflict && status != http.StatusTooManyRequests && !dependency {
			out.Class = retry.ClassTerminal
		} else {
			out.Class = retry.ClassStoredResult
		}
		a.Outcome = out
		return a
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
		a.Outcome = out
		return a
	}
	// Stripe's only 409 is a concurrent request under the same key (idempotency_key_in_use,
	// with or without the code): it may execute.
	busy := status == http.StatusConflict ||
		status == http.StatusTooManyRequests && se.Code == stripe.ErrorCodeLockTimeout
	// Our key was used with other parameters: an execution exists under it.
	idempotency := se.Type == stripe.ErrorTypeIdempotency ||
		status == http.StatusBadRequest && se.Code == "idempotency_error"
	if idempotency && !busy {
		out.ProcessorCode = "idempotency_error"
	}
	// Stripe-Should-Retry overrides whether to retry, never the evidence that a request
	// under our key may have executed.
	switch h.Get("Stripe-Should-Retry") {
	case "true":
		out.Class = retry.ClassRetry
		out.MaybeExecuted = maybeExecutedByStatus(status) || idempotency || dependency
		if busy {
			// Another request under our key is running at the processor: retry after the
			// short wait, and it may execute meanwhile.
			out.Class, out.MaybeExecuted = retry.ClassBusy, true
		}
		a.Outcome = out
		return a
	case "false":
		if status == http.StatusInternalServerError || dependency {
			out.Class = retry.ClassUnknownFinal
		} else {
			out.Class = retry.ClassTerminal
			out.MaybeExecuted = status >= 500 || busy || idempotency
		}
		a.Outcome = out
		return a
	}
	switch {
	case busy:
		// Another request under our key is running at the processor: it may execute.
		out.Class = retry.ClassBusy
		out.MaybeExecuted = true
	case status == http.StatusTooManyRequests:
		out.Class = retry.ClassRetryAfter
	case status == http.StatusInternalServerError, dependency:
		out.Class = retry.ClassUnknownFinal
	case status == http.StatusServiceUnavailable:
		out.Class = retry.ClassRetry
	case status >= 500:
		out.Class = retry.ClassRetry
		out.MaybeExecuted = true
	case idempotency:
		// A bug, surfaced loudly; the outcome stays unknown.
		out.Class = retry.ClassTerminal
		out.MaybeExecuted = true
	default:
		out.Class = retry.ClassTerminal
	}
	a.Outcome = out
	return a
}

func maybeExecutedByStatus(status int) bool {
	switch status {
	case http.StatusServiceUnavailable, http.StatusTooManyRequests:
		return false
	}
	return status >= 500 || status == http.StatusConflict
}

// classifyUnparsed classifies an answer whose body was not the processor's JSON.
func classifyUnparsed(r response, err error) Attempt {
	out := retry.Outcome{HTTPStatus: r.status, RetryAfter: r.header.Get("Retry-After"), Date: r.header.Get("Date"),
		ProcessorCode: "unparsable_response"}
	switch {
	case r.status == http.StatusServiceUnavailable || r.status == http.StatusTooManyRequests:
		out.Class = retry.ClassRetry
	case r.status == http.StatusBadGateway || r.status == http.StatusGatewayTimeout:
		out.Class = retry.ClassRetry
		out.MaybeExecuted = true
	default:
		// A write whose answer cannot be read may have executed.
		out.Class = retry.ClassOutcomeUnknown
		out.MaybeExecuted = true
	}
	return Attempt{Outcome: out, RequestID: r.header.Get("Request-Id"), Err: err}
}

// classifyNetwork classifies a request that got no answer.
func classifyNetwork(r response, err error) Attempt {
	out := retry.Outcome{ProcessorCode: networkCode(r, err)}
	if r.wrote {
		// Written in full: the processor may have executed it (a timeout after send, a
		// dropped connection).
		out.Class = retry.ClassOutcomeUnknown
		out.MaybeExecuted = true
	} else {
		// Never written: a refused connection, a DNS failure, a failed write.
		out.Class = retry.ClassNotSent
	}
	return Attempt{Outcome: out, Err: err}
}

func networkCode(r response, err error) string {
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(r.ctxErr, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled) || errors.Is(r.ctxErr, context.Canceled):
		return "canceled"
	case err != nil && strings.Contains(err.Error(), "connection refused"):
		return "connection_refused"
	case err != nil && strings.Contains(err.Error(), "connection reset"):
		return "connection_reset"
	case err != nil && (strings.Contains(err.Error(), "EOF") || strings.Contains(err.Error(), "closed")):
		return "connection_closed"
	}
	return "network_error"
}

// declineOf gathers the decline evidence of a card error; raw is the error answer's body,
// for the fields stripe-go v76 does not decode.
func declineOf(se *stripe.Error, raw []byte) *Decline {
	d := &Decline{Code: string(se.Code), DeclineCode: string(se.DeclineCode), Message: redact(se.Msg)}
	if len(raw) > 0 {
		var nf newerErrorFields
		if json.Unmarshal(raw, &nf) == nil {
			d.AdviceCode = nf.Error.AdviceCode
			d.NetworkAdviceCode = nf.Error.NetworkAdviceCode
			d.NetworkDeclineCode = nf.Error.NetworkDeclineCode
		}
	}
	return d
}

// lastPaymentErrorOf re-wraps a PaymentIntent body's last_payment_error as an error body,
// so that declineOf reads its newer fields.
func lastPaymentErrorOf(raw []byte) []byte {
	if len(raw) == 0 {
		return nil
	}
	var pi struct {
		LastPaymentError json.RawMessage `json:"last_payment_error"`
	}
	if json.Unmarshal(raw, &pi) != nil || len(pi.LastPaymentError) == 0 {
		return nil
	}
	out, _ := json.Marshal(map[string]json.RawMessage{"error": pi.LastPaymentError})
	return out
}

// codeForReport is the code recorded with the attempt: the most specific one.
func (d *Decline) codeForReport() string {
	if d.DeclineCode != "" {
		return d.DeclineCode
	}
	return d.Code
}
