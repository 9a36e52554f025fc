package processor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"

	"github.com/stripe/stripe-go/v76"

	"github.com/paygate/paygate/retry"
)

func stripeErr(status int, typ stripe.ErrorType, code string, header map[string]string, raw string) *stripe.Error {
	h := http.Header{}
	for k, v := range header {
		h.Set(k, v)
	}
	e := &stripe.Error{HTTPStatusCode: status, Type: typ, Code: stripe.ErrorCode(code), Msg: "message"}
	e.SetLastResponse(&stripe.APIResponse{Header: h, StatusCode: status, RawJSON: []byte(raw)})
	return e
}

func intent(status stripe.PaymentIntentStatus, header map[string]string) *stripe.PaymentIntent {
	h := http.Header{}
	for k, v := range header {
		h.Set(k, v)
	}
	pi := &stripe.PaymentIntent{ID: "pi_1", Status: status}
	pi.SetLastResponse(&stripe.APIResponse{Header: h, StatusCode: 200})
	return pi
}

// TestClassifyWrite covers every row of the classification table of the design.
func TestClassifyWrite(t *testing.T) {
	t.Parallel()
	declined := stripeErr(402, stripe.ErrorTypeCard, "card_declined", nil,
		`{"error":{"type":"card_error","code":"card_declined","decline_code":"do_not_honor","network_decline_code":"05","advice_code":"try_again_later","network_advice_code":"24"}}`)
	declined.DeclineCode = "do_not_honor"
	declined.PaymentIntent = &stripe.PaymentIntent{ID: "pi_declined", Status: stripe.PaymentIntentStatusRequiresPaymentMethod}
	withLastError := intent(stripe.PaymentIntentStatusRequiresPaymentMethod, nil)
	withLastError.LastPaymentError = &stripe.Error{Type: stripe.ErrorTypeCard, Code: "card_declined", DeclineCode: "insufficient_funds"}
	// stripe-mock's PaymentIntent fixture: requires_payment_method, last_payment_error
	// {"type": "idempotency_error"}; no issuer refused anything.
	withIdempotencyError := intent(stripe.PaymentIntentStatusRequiresPaymentMethod, nil)
	withIdempotencyError.LastPaymentError = &stripe.Error{Type: stripe.ErrorTypeIdempotency}
	withAPIError := intent(stripe.PaymentIntentStatusRequiresPaymentMethod, nil)
	withAPIError.LastPaymentError = &stripe.Error{Type: stripe.ErrorTypeAPI, Code: "processing_error"}
	withUntypedError := intent(stripe.PaymentIntentStatusRequiresPaymentMethod, nil)
	withUntypedError.LastPaymentError = &stripe.Error{Code: "card_declined", DeclineCode: "insufficient_funds"}
	resent := response{wrote: true, writes: 2}

	for _, tc := range []struct {
		name      string
		r         response
		pi        *stripe.PaymentIntent
		err       error
		wantClass retry.Class
		wantMaybe bool
	}{
		{"refused before send", response{}, nil, errors.New("dial tcp: connection refused"), retry.ClassNotSent, false},
		{"write failed", response{wrote: false}, nil, errors.New("write: broken pipe"), retry.ClassNotSent, false},
		{"timeout after send", response{wrote: true, ctxErr: context.DeadlineExceeded}, nil,
			fmt.Errorf("Post: %w", context.DeadlineExceeded), retry.ClassOutcomeUnknown, true},
		{"dropped after send", response{wrote: true}, nil, errors.New("EOF"), retry.ClassOutcomeUnknown, true},
		{"succeeded", response{}, intent(stripe.PaymentIntentStatusSucceeded, nil), nil, retry.ClassSuccess, false},
		{"replayed success", response{}, intent(stripe.PaymentIntentStatusSucceeded, map[string]string{"Idempotent-Replayed": "true"}), nil, retry.ClassSuccess, false},
		{"processing", response{}, intent(stripe.PaymentIntentStatusProcessing, nil), nil, retry.ClassUnknownFinal, true},
		{"requires action", response{}, intent(stripe.PaymentIntentStatusRequiresAction, nil), nil, retry.ClassUnknownFinal, true},
		{"requires payment method with a card_error", response{}, withLastError, nil, retry.ClassDecline, false},
		// Only a card_error is a decline (Stripe's error object, "type"); stripe-mock answers
		// every create with the idempotency_error one.
		{"requires payment method with an idempotency_error", response{}, withIdempotencyError, nil, retry.ClassUnknownFinal, true},
		{"requires payment method with an api_error", response{}, withAPIError, nil, retry.ClassUnknownFinal, true},
		{"requires payment method with an untyped error", response{}, withUntypedError, nil, retry.ClassUnknownFinal, true},
		{"canceled", response{}, intent(stripe.PaymentIntentStatusCanceled, nil), nil, retry.ClassTerminal, false},
		{"402 decline", response{}, nil, declined, retry.ClassDecline, false},
		{"replayed 402", response{}, nil, stripeErr(402, stripe.ErrorTypeCard, "card_declined", map[string]string{"Idempotent-Replayed": "true"}, `{}`), retry.ClassDecline, false},
		{"replayed 500", response{}, nil, stripeErr(500, stripe.ErrorTypeAPI, "", map[string]string{"Idempotent-Replayed": "true"}, `{}`), retry.ClassStoredResult, true},
		{"replayed 400", response{}, nil, stripeErr(400, stripe.ErrorTypeInvalidRequest, "parameter_missing", map[string]string{"Idempotent-Replayed": "true"}, `{}`), retry.ClassTerminal, false},
		// The processor refused our own credentials: nothing ran, and the account is
		// unusable until the configuration is fixed (a 503 for the caller, not a 422).
		{"401 key refused", response{}, nil, stripeErr(401, stripe.ErrorType("authentication_error"), "", nil, `{}`), retry.ClassRetry, false},
		{"401 key refused, should not retry", response{}, nil, stripeErr(401, stripe.ErrorType("authentication_error"), "",
			map[string]string{"Stripe-Should-Retry": "false"}, `{}`), retry.ClassRetry, false},
		{"403 permission", response{}, nil, stripeErr(403, stripe.ErrorTypeInvalidRequest, "secret_key_required", nil, `{}`), retry.ClassRetry, false},
		{"409 key in use", response{}, nil, stripeErr(409, stripe.ErrorTypeIdempotency, "idempotency_key_in_use", nil, `{}`), retry.ClassBusy, true},
		{"429 lock_timeout", response{}, nil, stripeErr(429, stripe.ErrorTypeInvalidRequest, "lock_timeout", nil, `{}`), retry.ClassBusy, true},
		{"429 rate_limit", response{}, nil, stripeErr(429, stripe.ErrorTypeInvalidRequest, "rate_limit", map[string]string{"Retry-After": "30"}, `{}`), retry.ClassRetryAfter, false},
		{"500 keyed write", response{}, nil, stripeErr(500, stripe.ErrorTypeAPI, "", nil, `{}`), retry.ClassUnknownFinal, true},
		// Stripe's 424, a failed external dependency (Stripe, "Advanced error handling", HTTP
		// status codes): on the keyed write an unknown outcome like a 500, never a bad request.
		{"424 keyed write", response{}, nil, stripeErr(424, stripe.ErrorTypeAPI, "", nil, `{}`), retry.ClassUnknownFinal, true},
		{"424 typed invalid_request_error", response{}, nil, stripeErr(424, stripe.ErrorTypeInvalidRequest, "", nil, `{}`), retry.ClassUnknownFinal, true},
		{"replayed 424", response{}, nil, stripeErr(424, stripe.ErrorTypeAPI, "", map[string]string{"Idempotent-Replayed": "true"}, `{}`), retry.ClassStoredResult, true},
		{"should-retry false on 424", response{}, nil, stripeErr(424, stripe.ErrorTypeAPI, "", map[string]string{"Stripe-Should-Retry": "false"}, `{}`), retry.ClassUnknownFinal, true},
		{"should-retry true on 424", response{}, nil, stripeErr(424, stripe.ErrorTypeAPI, "", map[string]string{"Stripe-Should-Retry": "true"}, `{}`), retry.ClassRetry, true},
		{"non-JSON 424", response{wrote: true, status: 424, header: http.Header{}}, nil, errors.New("Couldn't deserialize JSON"), retry.ClassOutcomeUnknown, true},
		{"502", response{}, nil, stripeErr(502, stripe.ErrorTypeAPI, "", nil, `{}`), retry.ClassRetry, true},
		{"503", response{}, nil, stripeErr(503, stripe.ErrorTypeAPI, "", nil, `{}`), retry.ClassRetry, false},
		{"504", response{}, nil, stripeErr(504, stripe.ErrorTypeAPI, "", nil, `{}`), retry.ClassRetry, true},
		{"should-retry false on 503", response{}, nil, stripeErr(503, stripe.ErrorTypeAPI, "", map[string]string{"Stripe-Should-Retry": "false"}, `{}`), retry.ClassTerminal, true},
		{"should-retry true on 400", response{}, nil, stripeErr(400, stripe.ErrorTypeInvalidRequest, "x", map[string]string{"Stripe-Should-Retry": "true"}, `{}`), retry.ClassRetry, false},
		{"should-retry false on 500", response{}, nil, stripeErr(500, stripe.ErrorTypeAPI, "", map[string]string{"Stripe-Should-Retry": "false"}, `{}`), retry.ClassUnknownFinal, true},
		{"400 idempotency_error", response{}, nil, stripeErr(400, stripe.ErrorTypeIdempotency, "", nil, `{}`), retry.ClassTerminal, true},
		{"should-retry false on 409 key in use", response{}, nil, stripeErr(409, stripe.ErrorTypeInvalidRequest, "idempotency_key_in_use", map[string]string{"Stripe-Should-Retry": "false"}, `{}`), retry.ClassTerminal, true},
		{"should-retry false on 400 idempotency_error", response{}, nil, stripeErr(400, stripe.ErrorTypeIdempotency, "", map[string]string{"Stripe-Should-Retry": "false"}, `{}`), retry.ClassTerminal, true},
		{"should-retry true on 400 idempotency_error", response{}, nil, stripeErr(400, stripe.ErrorTypeIdempotency, "", map[string]string{"Stripe-Should-Retry": "true"}, `{}`), retry.ClassRetry, true},
		{"409 without a code", response{}, nil, stripeErr(409, stripe.ErrorTypeInvalidRequest, "", nil, `{}`), retry.ClassBusy, true},
		{"400 invalid", response{}, nil, stripeErr(400, stripe.ErrorTypeInvalidRequest, "parameter_missing", nil, `{}`), retry.ClassTerminal, false},
		{"404 payment method", response{}, nil, stripeErr(404, stripe.ErrorTypeInvalidRequest, "resource_missing", nil, `{}`), retry.ClassTerminal, false},
		{"non-JSON 200", response{wrote: true, status: 200, header: http.Header{}}, nil, errors.New("Couldn't deserialize JSON"), retry.ClassOutcomeUnknown, true},
		{"non-JSON 502", response{wrote: true, status: 502, header: http.Header{}}, nil, errors.New("Couldn't deserialize JSON"), retry.ClassRetry, true},
		{"non-JSON 503", response{wrote: true, status: 503, header: http.Header{}}, nil, errors.New("Couldn't deserialize JSON"), retry.ClassRetry, false},
		// Written twice (the transport re-sent it after a reset): the first write may have
		// executed unless the answer is the key's own result.
		{"re-sent, then 503", resent, nil, stripeErr(503, stripe.ErrorTypeAPI, "", nil, `{}`), retry.ClassRetry, true},
		{"re-sent, then 429 rate_limit", resent, nil, stripeErr(429, stripe.ErrorTypeInvalidRequest, "rate_limit", map[string]string{"Retry-After": "30"}, `{}`), retry.ClassRetryAfter, true},
		{"re-sent, then 400 invalid", resent, nil, stripeErr(400, stripe.ErrorTypeInvalidRequest, "parameter_missing", nil, `{}`), retry.ClassTerminal, true},
		{"re-sent, then non-JSON 503", response{wrote: true, writes: 2, status: 503, header: http.Header{}}, nil, errors.New("Couldn't deserialize JSON"), retry.ClassRetry, true},
		{"re-sent, then should-retry true on 400", resent, nil, stripeErr(400, stripe.ErrorTypeInvalidRequest, "x", map[string]string{"Stripe-Should-Retry": "true"}, `{}`), retry.ClassRetry, true},
		{"re-sent, then succeeded", resent, intent(stripe.PaymentIntentStatusSucceeded, nil), nil, retry.ClassSuccess, false},
		{"re-sent, then 402 decline", resent, nil, declined, retry.ClassDecline, false},
		{"re-sent, then canceled", resent, intent(stripe.PaymentIntentStatusCanceled, nil), nil, retry.ClassTerminal, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a := classifyWrite(tc.r, answerOf(tc.pi), tc.err)
			if a.Outcome.Class != tc.wantClass {
				t.Fatalf("class: got %s, want %s", a.Outcome.Class, tc.wantClass)
			}
			maybe := a.Outcome.MaybeExecuted || a.Outcome.Class.Executed()
			if maybe != tc.wantMaybe {
				t.Fatalf("may have executed: got %v, want %v", maybe, tc.wantMaybe)
			}
		})
	}
}

func TestClassifyDeclineEvidence(t *testing.T) {
	t.Parallel()
	e := stripeErr(402, stripe.ErrorTypeCard, "card_declined", nil,
		`{"error":{"type":"card_error","code":"card_declined","decline_code":"do_not_honor","network_decline_code":"05","advice_code":"try_again_later","network_advice_code":"24"}}`)
	e.DeclineCode = "do_not_honor"
	e.PaymentIntent = &stripe.PaymentIntent{ID: "pi_9"}
	a := classifyWrite(response{}, nil, e)
	want := Decline{Code: "card_declined", DeclineCode: "do_not_honor", AdviceCode: "try_again_later",
		NetworkDeclineCode: "05", NetworkAdviceCode: "24", Message: "message"}
	if a.Decline == nil || *a.Decline != want {
		t.Fatalf("decline: got %+v, want %+v", a.Decline, want)
	}
	if a.PaymentIntent != "pi_9" || a.Outcome.ProcessorCode != "do_not_honor" {
		t.Fatalf("got payment intent %q code %q, want pi_9 do_not_honor", a.PaymentIntent, a.Outcome.ProcessorCode)
	}
}

func TestRedact(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"sk_test_abc123", "rk_live_Zz9", "pi_123_secret_456", `"client_secret": "x"`, "4242424242424242"} {
		if got := redact("before " + s + " after"); got != "before [redacted] after" {
			t.Errorf("redact(%q) = %q", s, got)
		}
	}
}

// TestIntentDeclineOnlyFromCardError: a PaymentIntent read back carries decline evidence only
// for a last_payment_error of type card_error; reconciliation then never files another error
// (stripe-mock's idempotency_error fixture, an api_error) as the issuer's decline.
func TestIntentDeclineOnlyFromCardError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		typ         stripe.ErrorType
		wantDecline bool
	}{
		{"card_error", stripe.ErrorTypeCard, true},
		{"idempotency_error", stripe.ErrorTypeIdempotency, false},
		{"api_error", stripe.ErrorTypeAPI, false},
		{"invalid_request_error", stripe.ErrorTypeInvalidRequest, false},
		{"no type", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			pi := &stripe.PaymentIntent{ID: "pi_1", Status: stripe.PaymentIntentStatusRequiresPaymentMethod,
				LastPaymentError: &stripe.Error{Type: tc.typ, Code: "card_declined", DeclineCode: "do_not_honor"}}
			if got := intentOf(pi, nil).Decline != nil; got != tc.wantDecline {
				t.Fatalf("decline: got %v, want %v", got, tc.wantDecline)
			}
		})
	}
}
