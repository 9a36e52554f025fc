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

// classifyWrite classifies the answer to a keyed write (create and confirm): its Outcome is
// ClassifyWrite's, and it carries the evidence the answer gave (the PaymentIntent, a decline).
func classifyWrite(r response, pi *intentAnswer, err error) Attempt {
	var (
		se  *stripe.Error
		a   Attempt
		ans = Answer{Writes: r.writes}
	)
	switch {
	case err == nil && pi != nil:
		lr := pi.LastResponse
		h := headerOf(lr)
		a = Attempt{PaymentIntent: pi.ID, Status: string(pi.Status), RequestID: requestIDOf(lr, h),
			Replayed: h.Get("Idempotent-Replayed") == "true"}
		ans.Status, ans.Intent, ans.Replayed = http.StatusOK, string(pi.Status), a.Replayed
		if lr != nil && lr.StatusCode != 0 {
			ans.Status = lr.StatusCode
		}
		if le := pi.LastPaymentError; le != nil {
			ans.IntentError, ans.ErrorType = true, string(le.Type)
			if isCardError(le) {
				var raw []byte
				if lr != nil {
					raw = lr.RawJSON
				}
				a.Decline = declineOf(le, lastPaymentErrorOf(raw))
				ans.Code, ans.DeclineCode = a.Decline.Code, a.Decline.DeclineCode
			}
		}
	case errors.As(err, &se):
		h := headerOf(se.LastResponse)
		a = Attempt{RequestID: se.RequestID, Err: errors.New(redact(se.Msg)), Replayed: h.Get("Idempotent-Replayed") == "true"}
		if a.RequestID == "" {
			a.RequestID = h.Get("Request-Id")
		}
		if se.PaymentIntent != nil {
			a.PaymentIntent = se.PaymentIntent.ID
			a.Status = string(se.PaymentIntent.Status)
		}
		ans = errorAnswer(se, h)
		ans.Writes = r.writes
		if ans.declined() {
			var raw []byte
			if se.LastResponse != nil {
				raw = se.LastResponse.RawJSON
			}
			a.Decline = declineOf(se, raw)
		}
	case r.status != 0:
		// An answer stripe-go could not parse: a proxy's HTML page, a truncated body.
		a = Attempt{RequestID: r.header.Get("Request-Id"), Err: err}
		ans.Status, ans.Unparsed = r.status, true
		ans.RetryAfter, ans.Date = r.header.Get("Retry-After"), r.header.Get("Date")
	default:
		a = Attempt{Err: err}
		ans.Written, ans.Failure = r.wrote, networkCode(r, err)
	}
	a.Outcome = ClassifyWrite(ans)
	return a
}

// errorAnswer is the Answer of an error answer stripe-go decoded, with its headers h.
func errorAnswer(se *stripe.Error, h http.Header) Answer {
	return Answer{Status: se.HTTPStatusCode, ErrorType: string(se.Type), Code: string(se.Code),
		DeclineCode: string(se.DeclineCode), ShouldRetry: h.Get("Stripe-Should-Retry"),
		Replayed: h.Get("Idempotent-Replayed") == "true", RetryAfter: h.Get("Retry-After"), Date: h.Get("Date")}
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

// isCardError reports whether a PaymentIntent's last_payment_error is the issuer's (or the
// card's) refusal: type card_error. Any other type there is not a decline.
func isCardError(le *stripe.Error) bool {
	return le != nil && le.Type == stripe.ErrorTypeCard
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
