package sim_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/stripe/stripe-go/v76"

	"github.com/paygate/paygate/internal/sim"
)

func TestCreateApproves(t *testing.T) {
	t.Parallel()
	for _, pm := range []string{
		"pm_card_visa", "pm_card_visa_debit", "pm_card_mastercard", "pm_card_amex", "pm_card_discover",
		"pm_card_diners", "pm_card_jcb", "pm_card_unionpay", "pm_sim_approve", "pm_sim_approve_mc_card7_exp0131",
	} {
		t.Run(pm, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			pi, err := b.pi.New(charge(pm, "key-"+pm))
			if err != nil {
				t.Fatalf("got error %v, want success", err)
			}
			if pi.Status != stripe.PaymentIntentStatusSucceeded {
				t.Errorf("got status %q, want succeeded", pi.Status)
			}
			if !strings.HasPrefix(pi.ID, "pi_") || !strings.HasPrefix(pi.ClientSecret, pi.ID+"_secret_") {
				t.Errorf("got id %q secret %q, want pi_... and pi_..._secret_...", pi.ID, pi.ClientSecret)
			}
			if pi.AmountReceived != 1999 || pi.Amount != 1999 || pi.Currency != "usd" {
				t.Errorf("got amount %d received %d %s, want 1999 1999 usd", pi.Amount, pi.AmountReceived, pi.Currency)
			}
			if pi.PaymentMethod == nil || pi.PaymentMethod.ID != pm {
				t.Errorf("got payment method %+v, want %s", pi.PaymentMethod, pm)
			}
			if pi.LatestCharge == nil || !strings.HasPrefix(pi.LatestCharge.ID, "ch_") {
				t.Errorf("got latest charge %+v, want ch_...", pi.LatestCharge)
			}
			if got := pi.Metadata["charge_id"]; got != "ch_key-"+pm {
				t.Errorf("got metadata charge_id %q, want %q", got, "ch_key-"+pm)
			}
			if got := pi.Created; got != b.clock.Now().Unix() {
				t.Errorf("got created %d, want %d (the injected clock)", got, b.clock.Now().Unix())
			}
			h := pi.LastResponse.Header
			if got := pi.LastResponse.RequestID; !strings.HasPrefix(got, "req_") {
				t.Errorf("got Request-Id %q, want req_...", got)
			}
			if got := h.Get("Idempotency-Key"); got != "key-"+pm {
				t.Errorf("got Idempotency-Key %q, want the request's", got)
			}
			if got := h.Get("Idempotent-Replayed"); got != "" {
				t.Errorf("got Idempotent-Replayed %q on a first answer, want none", got)
			}
		})
	}
}

// declineCase is a payment method and the decline Stripe reports for it.
type declineCase struct {
	pm                 string
	code, declineCode  string
	networkDeclineCode string
	networkAdviceCode  string
	adviceCode         string
	brand              string
}

func TestCreateDeclines(t *testing.T) {
	t.Parallel()
	cases := []declineCase{
		// Stripe's own test payment methods.
		{pm: "pm_card_chargeDeclined", code: "card_declined", declineCode: "generic_decline", brand: "visa"},
		{pm: "pm_card_visa_chargeDeclined", code: "card_declined", declineCode: "generic_decline", brand: "visa"},
		{pm: "pm_card_visa_chargeDeclinedInsufficientFunds", code: "card_declined", declineCode: "insufficient_funds", brand: "visa"},
		{pm: "pm_card_chargeDeclinedInsufficientFunds", code: "card_declined", declineCode: "insufficient_funds", brand: "visa"},
		{pm: "pm_card_chargeDeclinedLostCard", code: "card_declined", declineCode: "lost_card", brand: "visa"},
		{pm: "pm_card_visa_chargeDeclinedLostCard", code: "card_declined", declineCode: "lost_card", brand: "visa"},
		{pm: "pm_card_chargeDeclinedStolenCard", code: "card_declined", declineCode: "stolen_card", brand: "visa"},
		{pm: "pm_card_chargeDeclinedExpiredCard", code: "expired_card", declineCode: "expired_card", brand: "visa"},
		{pm: "pm_card_chargeDeclinedIncorrectCvc", code: "incorrect_cvc", declineCode: "incorrect_cvc", brand: "visa"},
		{pm: "pm_card_chargeDeclinedProcessingError", code: "processing_error", declineCode: "processing_error", brand: "visa"},
		{pm: "pm_card_chargeDeclinedVelocityLimitExceeded", code: "card_declined", declineCode: "card_velocity_exceeded", brand: "visa"},
		{pm: "pm_card_visa_chargeDeclinedVelocityLimitExceeded", code: "card_declined", declineCode: "card_velocity_exceeded", brand: "visa"},
		{pm: "pm_card_chargeDeclinedFraudulent", code: "card_declined", declineCode: "fraudulent", brand: "visa"},
		{pm: "pm_card_radarBlock", code: "card_declined", declineCode: "fraudulent", brand: "visa"},
		// Every decline code of the design, through the simulator's ids.
		{pm: "pm_sim_decline_lost_card_visa_41", code: "card_declined", declineCode: "lost_card", networkDeclineCode: "41", brand: "visa"},
		{pm: "pm_sim_decline_stolen_card_visa_43", code: "card_declined", declineCode: "stolen_card", networkDeclineCode: "43", brand: "visa"},
		{pm: "pm_sim_decline_pickup_card_visa_04", code: "card_declined", declineCode: "pickup_card", networkDeclineCode: "04", brand: "visa"},
		{pm: "pm_sim_decline_expired_card_visa_54", code: "expired_card", declineCode: "expired_card", networkDeclineCode: "54", brand: "visa"},
		{pm: "pm_sim_decline_incorrect_cvc_visa_N7", code: "incorrect_cvc", declineCode: "incorrect_cvc", networkDeclineCode: "N7", brand: "visa"},
		{pm: "pm_sim_decline_insufficient_funds_visa_51", code: "card_declined", declineCode: "insufficient_funds", networkDeclineCode: "51", brand: "visa"},
		{pm: "pm_sim_decline_card_velocity_exceeded_visa_61", code: "card_declined", declineCode: "card_velocity_exceeded", networkDeclineCode: "61", brand: "visa"},
		{pm: "pm_sim_decline_generic_decline", code: "card_declined", declineCode: "generic_decline", brand: "visa"},
		{pm: "pm_sim_decline_do_not_honor_visa_05", code: "card_declined", declineCode: "do_not_honor", networkDeclineCode: "05", brand: "visa"},
		{pm: "pm_sim_decline_processing_error_visa_96", code: "processing_error", declineCode: "processing_error", networkDeclineCode: "96", brand: "visa"},
		{pm: "pm_sim_decline_try_again_later_visa_19", code: "card_declined", declineCode: "try_again_later", networkDeclineCode: "19", brand: "visa"},
		{pm: "pm_sim_decline_issuer_not_available_visa_91", code: "card_declined", declineCode: "issuer_not_available", networkDeclineCode: "91", brand: "visa"},
		{pm: "pm_sim_decline_invalid_account_visa_14", code: "card_declined", declineCode: "invalid_account", networkDeclineCode: "14", brand: "visa"},
		{pm: "pm_sim_decline_revocation_of_authorization_visa_R1", code: "card_declined", declineCode: "revocation_of_authorization", networkDeclineCode: "R1", brand: "visa"},
		{pm: "pm_sim_decline_stop_payment_order_visa_R0", code: "card_declined", declineCode: "stop_payment_order", networkDeclineCode: "R0", brand: "visa"},
		{pm: "pm_sim_decline_do_not_try_again_mc_mac03", code: "card_declined", declineCode: "do_not_try_again", networkAdviceCode: "03", brand: "mastercard"},
		{pm: "pm_sim_decline_authentication_required", code: "authentication_required", declineCode: "authentication_required", brand: "visa"},
		{pm: "pm_sim_decline_insufficient_funds_mc_51_mac24", code: "card_declined", declineCode: "insufficient_funds", networkDeclineCode: "51", networkAdviceCode: "24", brand: "mastercard"},
		{pm: "pm_sim_decline_expired_card_mac01", code: "expired_card", declineCode: "expired_card", networkAdviceCode: "01", brand: "mastercard"},
		{pm: "pm_sim_decline_do_not_honor_visa_05_advice_try_again_later", code: "card_declined", declineCode: "do_not_honor", networkDeclineCode: "05", adviceCode: "try_again_later", brand: "visa"},
		{pm: "pm_sim_decline_generic_decline_advice_do_not_try_again", code: "card_declined", declineCode: "generic_decline", adviceCode: "do_not_try_again", brand: "visa"},
		{pm: "pm_sim_decline_some_future_code_amex", code: "card_declined", declineCode: "some_future_code", brand: "amex"},
		// Stripe's decline codes without a test card of Stripe's ("Decline codes"), and
		// Visa's category-2 codes (Checkout.com, "Visa response codes"; TabaPay: 83).
		{pm: "pm_sim_decline_authentication_not_handled", code: "card_declined", declineCode: "authentication_not_handled", brand: "visa"},
		{pm: "pm_sim_decline_mobile_device_authentication_required", code: "card_declined", declineCode: "mobile_device_authentication_required", brand: "visa"},
		{pm: "pm_sim_decline_incorrect_address", code: "incorrect_address", declineCode: "incorrect_address", brand: "visa"},
		{pm: "pm_sim_decline_duplicate_transaction", code: "card_declined", declineCode: "duplicate_transaction", brand: "visa"},
		{pm: "pm_sim_decline_pin_try_exceeded_visa_75", code: "card_declined", declineCode: "pin_try_exceeded", networkDeclineCode: "75", brand: "visa"},
		{pm: "pm_sim_decline_currency_not_supported", code: "card_declined", declineCode: "currency_not_supported", brand: "visa"},
		{pm: "pm_sim_decline_card_not_supported_mc", code: "card_declined", declineCode: "card_not_supported", brand: "mastercard"},
		{pm: "pm_sim_decline_restricted_card_visa_62", code: "card_declined", declineCode: "restricted_card", networkDeclineCode: "62", brand: "visa"},
		{pm: "pm_sim_decline_do_not_honor_visa_5C", code: "card_declined", declineCode: "do_not_honor", networkDeclineCode: "5C", brand: "visa"},
		{pm: "pm_sim_decline_generic_decline_visa_9g", code: "card_declined", declineCode: "generic_decline", networkDeclineCode: "9G", brand: "visa"},
		{pm: "pm_sim_decline_fraudulent_visa_83", code: "card_declined", declineCode: "fraudulent", networkDeclineCode: "83", brand: "visa"},
		// A card error Stripe sends with its code alone (Stripe, "Error codes").
		{pm: "pm_sim_decline_card_decline_rate_limit_exceeded", code: "card_decline_rate_limit_exceeded", brand: "visa"},
	}
	for _, tc := range cases {
		t.Run(tc.pm, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			pi, err := b.pi.New(charge(tc.pm, "key-"+tc.pm))
			se := stripeError(t, err)
			if pi == nil || pi.ID != "" {
				t.Errorf("got a PaymentIntent %v on a decline, want none from New", pi)
			}
			if se.HTTPStatusCode != http.StatusPaymentRequired || se.Type != stripe.ErrorTypeCard {
				t.Errorf("got %d %s, want 402 card_error", se.HTTPStatusCode, se.Type)
			}
			if _, ok := se.Err.(*stripe.CardError); !ok {
				t.Errorf("got typed error %T, want *stripe.CardError", se.Err)
			}
			if string(se.Code) != tc.code || string(se.DeclineCode) != tc.declineCode {
				t.Errorf("got code %q decline_code %q, want %q %q", se.Code, se.DeclineCode, tc.code, tc.declineCode)
			}
			if se.Msg == "" || se.DocURL == "" || !strings.HasPrefix(se.RequestID, "req_") {
				t.Errorf("got message %q doc_url %q request id %q, want all set", se.Msg, se.DocURL, se.RequestID)
			}
			if se.PaymentMethod == nil || se.PaymentMethod.ID != tc.pm || string(se.PaymentMethod.Card.Brand) != tc.brand {
				t.Errorf("got payment_method %+v, want %s (%s)", se.PaymentMethod, tc.pm, tc.brand)
			}
			got := se.PaymentIntent
			if got == nil || !strings.HasPrefix(got.ID, "pi_") {
				t.Fatalf("got payment_intent %+v, want the declined PaymentIntent", got)
			}
			if got.Status != stripe.PaymentIntentStatusRequiresPaymentMethod {
				t.Errorf("got status %q, want requires_payment_method", got.Status)
			}
			if got.LastPaymentError == nil || string(got.LastPaymentError.DeclineCode) != tc.declineCode ||
				got.LastPaymentError.Type != stripe.ErrorTypeCard {
				t.Errorf("got last_payment_error %+v, want card_error %s", got.LastPaymentError, tc.declineCode)
			}
			if got.LatestCharge == nil || got.LatestCharge.ID != se.ChargeID || se.ChargeID == "" {
				t.Errorf("got latest_charge %+v and error charge %q, want the same ch_", got.LatestCharge, se.ChargeID)
			}
			raw := rawError(t, se)
			for field, want := range map[string]string{
				"network_decline_code": tc.networkDeclineCode,
				"network_advice_code":  tc.networkAdviceCode,
				"advice_code":          tc.adviceCode,
			} {
				v, present := raw[field]
				switch {
				case want == "" && present:
					t.Errorf("got %s %v, want it absent", field, v)
				case want != "" && v != want:
					t.Errorf("got %s %v, want %q", field, v, want)
				}
			}
			// The stored PaymentIntent carries the same evidence.
			again, err := b.pi.Get(got.ID, nil)
			if err != nil {
				t.Fatal(err)
			}
			if again.Status != got.Status || string(again.LastPaymentError.DeclineCode) != tc.declineCode {
				t.Errorf("got retrieved %s %v, want %s %s", again.Status, again.LastPaymentError, got.Status, tc.declineCode)
			}
		})
	}
}

func TestCreateAuthentication(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name                  string
		pm                    string
		errorOnRequiresAction bool
		offSession            bool
		wantStatus            stripe.PaymentIntentStatus
		wantDecline           string
	}{
		{"on session waits for action", "pm_sim_requires_action", false, false, stripe.PaymentIntentStatusRequiresAction, ""},
		{"stripe 3ds card waits for action", "pm_card_threeDSecure2Required", false, false, stripe.PaymentIntentStatusRequiresAction, ""},
		{"error_on_requires_action fails", "pm_sim_requires_action", true, false, "", "authentication_required"},
		{"off session fails", "pm_card_authenticationRequired", false, true, "", "authentication_required"},
		{"set up for off session succeeds", "pm_card_authenticationRequiredOnSetup", false, true, stripe.PaymentIntentStatusSucceeded, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			p := charge(tc.pm, "k")
			p.ErrorOnRequiresAction = stripe.Bool(tc.errorOnRequiresAction)
			if tc.offSession {
				p.OffSession = stripe.Bool(true)
				p.Customer = stripe.String("cus_sim1")
			}
			pi, err := b.pi.New(p)
			if tc.wantDecline != "" {
				se := stripeError(t, err)
				if string(se.Code) != tc.wantDecline || string(se.DeclineCode) != tc.wantDecline || se.HTTPStatusCode != 402 {
					t.Errorf("got %d %s/%s, want 402 %s", se.HTTPStatusCode, se.Code, se.DeclineCode, tc.wantDecline)
				}
				if se.PaymentIntent == nil || se.PaymentIntent.Status != stripe.PaymentIntentStatusRequiresPaymentMethod {
					t.Errorf("got payment_intent %+v, want requires_payment_method", se.PaymentIntent)
				}
				return
			}
			if err != nil {
				t.Fatalf("got error %v, want status %s", err, tc.wantStatus)
			}
			if pi.Status != tc.wantStatus {
				t.Errorf("got status %q, want %q", pi.Status, tc.wantStatus)
			}
			if tc.wantStatus == stripe.PaymentIntentStatusRequiresAction &&
				(pi.NextAction == nil || pi.NextAction.Type != "use_stripe_sdk") {
				t.Errorf("got next_action %+v, want use_stripe_sdk", pi.NextAction)
			}
		})
	}
}

func TestProcessingSettles(t *testing.T) {
	t.Parallel()
	cases := []struct {
		pm          string
		wantStatus  stripe.PaymentIntentStatus
		wantDecline string
	}{
		{"pm_sim_processing", stripe.PaymentIntentStatusSucceeded, ""},
		{"pm_sim_processing_decline_insufficient_funds_visa_51", stripe.PaymentIntentStatusRequiresPaymentMethod, "insufficient_funds"},
	}
	for _, tc := range cases {
		t.Run(tc.pm, func(t *testing.T) {
			t.Parallel()
			b := setup(t, withConfig(func(c *sim.Config) { c.ProcessingTime = time.Minute }))
			pi, err := b.pi.New(charge(tc.pm, "k"))
			if err != nil {
				t.Fatal(err)
			}
			if pi.Status != stripe.PaymentIntentStatusProcessing || pi.Processing == nil {
				t.Fatalf("got status %q processing %+v, want processing", pi.Status, pi.Processing)
			}
			b.clock.Advance(59 * time.Second)
			if got, _ := b.pi.Get(pi.ID, nil); got.Status != stripe.PaymentIntentStatusProcessing {
				t.Errorf("got status %q before the processing time, want processing", got.Status)
			}
			b.clock.Advance(time.Second)
			got, err := b.pi.Get(pi.ID, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != tc.wantStatus {
				t.Errorf("got status %q, want %q", got.Status, tc.wantStatus)
			}
			if tc.wantDecline != "" && (got.LastPaymentError == nil || string(got.LastPaymentError.DeclineCode) != tc.wantDecline) {
				t.Errorf("got last_payment_error %+v, want %s", got.LastPaymentError, tc.wantDecline)
			}
			if e := b.ledgerEntry(t, "k"); e.Status != string(tc.wantStatus) {
				t.Errorf("got ledger status %q, want %q", e.Status, tc.wantStatus)
			}
		})
	}
}

func TestFirstConfirmationsDecline(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const pm = "pm_sim_decline_insufficient_funds_visa_51_first2"
	for i, want := range []string{"declined", "declined", "succeeded", "succeeded"} {
		pi, err := b.pi.New(charge(pm, "attempt-"+string(rune('a'+i))))
		got := "succeeded"
		if err != nil {
			got = "declined"
			if se := stripeError(t, err); se.DeclineCode != "insufficient_funds" {
				t.Errorf("attempt %d: got decline %q, want insufficient_funds", i, se.DeclineCode)
			}
		} else if pi.Status != stripe.PaymentIntentStatusSucceeded {
			got = string(pi.Status)
		}
		if got != want {
			t.Errorf("attempt %d: got %s, want %s", i, got, want)
		}
	}
}

func TestCreateExpand(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := charge("pm_sim_decline_do_not_honor_visa_05", "")
	p.Confirm = stripe.Bool(true)
	_, err := b.pi.New(p)
	se := stripeError(t, err)
	params := &stripe.PaymentIntentParams{}
	params.AddExpand("latest_charge")
	params.AddExpand("payment_method")
	pi, err := b.pi.Get(se.PaymentIntent.ID, params)
	if err != nil {
		t.Fatal(err)
	}
	if pi.PaymentMethod == nil || pi.PaymentMethod.Card == nil || pi.PaymentMethod.Card.Fingerprint == "" {
		t.Errorf("got payment_method %+v, want it expanded with a fingerprint", pi.PaymentMethod)
	}
	ch := pi.LatestCharge
	if ch == nil || ch.Status != stripe.ChargeStatusFailed || ch.Outcome == nil || ch.Outcome.Reason != "do_not_honor" ||
		ch.PaymentMethodDetails == nil || ch.PaymentMethodDetails.Card.Network != "visa" {
		t.Errorf("got latest_charge %+v, want a failed visa charge with reason do_not_honor", ch)
	}
	var raw struct {
		LatestCharge struct {
			Outcome map[string]any `json:"outcome"`
		} `json:"latest_charge"`
	}
	if err := jsonUnmarshal(pi.LastResponse.RawJSON, &raw); err != nil {
		t.Fatal(err)
	}
	if got := raw.LatestCharge.Outcome["network_decline_code"]; got != "05" {
		t.Errorf("got outcome.network_decline_code %v, want 05", got)
	}

	bad := &stripe.PaymentIntentParams{}
	bad.AddExpand("review")
	_, err = b.pi.Get(se.PaymentIntent.ID, bad)
	if se := stripeError(t, err); se.HTTPStatusCode != 400 || se.Param != "expand" {
		t.Errorf("got %d param %q, want 400 on expand", se.HTTPStatusCode, se.Param)
	}
}

func TestCreateValidation(t *testing.T) {
	t.Parallel()
	valid := url.Values{
		"amount": {"1999"}, "currency": {"usd"}, "payment_method": {"pm_card_visa"}, "confirm": {"true"},
	}
	with := func(change func(url.Values)) url.Values {
		v := url.Values{}
		for k, vs := range valid {
			v[k] = append([]string(nil), vs...)
		}
		change(v)
		return v
	}
	cases := []struct {
		name      string
		form      url.Values
		status    int
		code      string
		param     string
		errorType string
	}{
		{"missing amount", with(func(v url.Values) { v.Del("amount") }), 400, "parameter_missing", "amount", "invalid_request_error"},
		{"missing currency", with(func(v url.Values) { v.Del("currency") }), 400, "parameter_missing", "currency", "invalid_request_error"},
		{"amount not an integer", with(func(v url.Values) { v.Set("amount", "12.5") }), 400, "parameter_invalid_integer", "amount", "invalid_request_error"},
		{"amount too small", with(func(v url.Values) { v.Set("amount", "10") }), 400, "amount_too_small", "amount", "invalid_request_error"},
		{"amount too large", with(func(v url.Values) { v.Set("amount", "100000000") }), 400, "amount_too_large", "amount", "invalid_request_error"},
		{"bad currency", with(func(v url.Values) { v.Set("currency", "dollars") }), 400, "", "currency", "invalid_request_error"},
		{"unknown parameter", with(func(v url.Values) { v.Set("colour", "red") }), 400, "parameter_unknown", "colour", "invalid_request_error"},
		{"malformed key", with(func(v url.Values) { v.Set("metadata[a", "x") }), 400, "parameter_unknown", "metadata[a", "invalid_request_error"},
		{"unknown payment method", with(func(v url.Values) { v.Set("payment_method", "pm_nope") }), 400, "resource_missing", "payment_method", "invalid_request_error"},
		{"bad sim payment method", with(func(v url.Values) { v.Set("payment_method", "pm_sim_decline_") }), 400, "resource_missing", "payment_method", "invalid_request_error"},
		{"card details", with(func(v url.Values) { v.Set("payment_method_data[card][number]", "4242424242424242") }), 400, "", "payment_method_data", "invalid_request_error"},
		{"confirm without method", with(func(v url.Values) { v.Del("payment_method") }), 400, "payment_intent_unexpected_state", "payment_method", "invalid_request_error"},
		{"bad boolean", with(func(v url.Values) { v.Set("confirm", "yes") }), 400, "", "confirm", "invalid_request_error"},
		{"off_session without confirm", with(func(v url.Values) { v.Del("confirm"); v.Set("off_session", "true") }), 400, "", "off_session", "invalid_request_error"},
		{"return_url without confirm", with(func(v url.Values) { v.Del("confirm"); v.Set("return_url", "https://shop.example/r") }), 400, "", "return_url", "invalid_request_error"},
		{"return_url not a string", with(func(v url.Values) { v.Set("return_url[a]", "x") }), 400, "parameter_unknown", "return_url[a]", "invalid_request_error"},
		{"other method type", with(func(v url.Values) { v.Set("payment_method_types[0]", "sepa_debit") }), 400, "payment_intent_incompatible_payment_method", "payment_method_types", "invalid_request_error"},
		{"metadata key too long", with(func(v url.Values) { v.Set("metadata["+strings.Repeat("k", 41)+"]", "x") }), 400, "", "metadata[" + strings.Repeat("k", 41) + "]", "invalid_request_error"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			status, h, body := b.do(t, http.MethodPost, "/v1/payment_intents", tc.form, map[string]string{"Idempotency-Key": "k"})
			var env struct {
				Error map[string]any `json:"error"`
			}
			if err := jsonUnmarshal(body, &env); err != nil {
				t.Fatalf("decoding %s: %v", body, err)
			}
			if status != tc.status || env.Error["type"] != tc.errorType {
				t.Errorf("got %d %v, want %d %s", status, env.Error["type"], tc.status, tc.errorType)
			}
			if got, _ := env.Error["code"].(string); got != tc.code {
				t.Errorf("got code %q, want %q", got, tc.code)
			}
			if got, _ := env.Error["param"].(string); got != tc.param {
				t.Errorf("got param %q, want %q", got, tc.param)
			}
			if !strings.HasPrefix(h.Get("Request-Id"), "req_") {
				t.Errorf("got Request-Id %q, want req_...", h.Get("Request-Id"))
			}
			if strings.Contains(string(body), "4242424242424242") {
				t.Errorf("got the card number echoed in %s, want it never answered", body)
			}
		})
	}
}

func TestCreateWithoutConfirm(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := charge("pm_card_visa", "k")
	p.Confirm = nil
	pi, err := b.pi.New(p)
	if err != nil {
		t.Fatal(err)
	}
	if pi.Status != stripe.PaymentIntentStatusRequiresConfirmation || pi.LatestCharge != nil {
		t.Errorf("got %s charge %v, want requires_confirmation without a charge", pi.Status, pi.LatestCharge)
	}
}

func TestRetrieveMissing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	_, err := b.pi.Get("pi_doesNotExist", nil)
	se := stripeError(t, err)
	if se.HTTPStatusCode != http.StatusNotFound || se.Code != stripe.ErrorCodeResourceMissing || se.Type != stripe.ErrorTypeInvalidRequest {
		t.Errorf("got %d %s %s, want 404 resource_missing invalid_request_error", se.HTTPStatusCode, se.Code, se.Type)
	}
	status, _, _ := b.do(t, http.MethodPost, "/v1/payment_intents/pi_x/capture", url.Values{}, nil)
	if status != http.StatusNotFound {
		t.Errorf("got %d for an unknown route, want 404", status)
	}
}
