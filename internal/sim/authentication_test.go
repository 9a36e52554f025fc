package sim_test

import (
	"net/http"
	"testing"

	"github.com/stripe/stripe-go/v76"
)

// TestAuthenticationAnswersAreStoredAndListed: a card that asks for 3-D
// Secure answers as at Stripe, and the answer is an ordinary one: stored under
// the idempotency key, and the PaymentIntent in its status for retrieve, list
// and search.
func TestAuthenticationAnswersAreStoredAndListed(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		params     func() *stripe.PaymentIntentParams
		wantStatus stripe.PaymentIntentStatus
		wantNext   stripe.PaymentIntentNextActionType
		wantCode   string
	}{
		{"on session waits for the cardholder", func() *stripe.PaymentIntentParams {
			return charge("pm_sim_requires_action", "k3ds")
		}, stripe.PaymentIntentStatusRequiresAction, "use_stripe_sdk", ""},
		{"Stripe's 3DS2 card on session", func() *stripe.PaymentIntentParams {
			return charge("pm_card_threeDSecure2Required", "k3ds")
		}, stripe.PaymentIntentStatusRequiresAction, "use_stripe_sdk", ""},
		{"on session with a return_url redirects", func() *stripe.PaymentIntentParams {
			p := charge("pm_card_authenticationRequired", "k3ds")
			p.ReturnURL = stripe.String("https://shop.example/return")
			return p
		}, stripe.PaymentIntentStatusRequiresAction, "redirect_to_url", ""},
		{"off session fails", func() *stripe.PaymentIntentParams {
			p := charge("pm_sim_requires_action", "k3ds")
			p.OffSession, p.Customer = stripe.Bool(true), stripe.String("cus_sim1")
			return p
		}, stripe.PaymentIntentStatusRequiresPaymentMethod, "", "authentication_required"},
		{"error_on_requires_action fails", func() *stripe.PaymentIntentParams {
			p := charge("pm_card_threeDSecure2Required", "k3ds")
			p.ErrorOnRequiresAction = stripe.Bool(true)
			return p
		}, stripe.PaymentIntentStatusRequiresPaymentMethod, "", "authentication_required"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			first, err := b.pi.New(tc.params())
			if tc.wantCode != "" {
				se := stripeError(t, err)
				if se.HTTPStatusCode != http.StatusPaymentRequired || se.Type != stripe.ErrorTypeCard ||
					string(se.Code) != tc.wantCode || string(se.DeclineCode) != tc.wantCode {
					t.Fatalf("got %d %s %s/%s, want 402 card_error %s", se.HTTPStatusCode, se.Type, se.Code, se.DeclineCode, tc.wantCode)
				}
				if se.PaymentIntent == nil {
					t.Fatal("got no payment_intent in the error, want one")
				}
				first = se.PaymentIntent
			} else if err != nil {
				t.Fatalf("got error %v, want status %s", err, tc.wantStatus)
			}
			if first.Status != tc.wantStatus {
				t.Fatalf("got status %q, want %q", first.Status, tc.wantStatus)
			}
			if tc.wantNext != "" && (first.NextAction == nil || first.NextAction.Type != tc.wantNext) {
				t.Fatalf("got next_action %+v, want %s", first.NextAction, tc.wantNext)
			}
			if tc.wantNext == "redirect_to_url" && (first.NextAction.RedirectToURL == nil ||
				first.NextAction.RedirectToURL.URL == "" || first.NextAction.RedirectToURL.ReturnURL != "https://shop.example/return") {
				t.Fatalf("got redirect_to_url %+v, want a url and the return_url", first.NextAction.RedirectToURL)
			}
			if tc.wantNext == "" && first.NextAction != nil {
				t.Fatalf("got next_action %+v, want none", first.NextAction)
			}

			// The same key replays the stored answer.
			again, err := b.pi.New(tc.params())
			if tc.wantCode != "" {
				se := stripeError(t, err)
				if se.LastResponse.Header.Get("Idempotent-Replayed") != "true" || se.PaymentIntent == nil ||
					se.PaymentIntent.ID != first.ID {
					t.Fatalf("same key again: got %+v, want the stored 402 replayed", se)
				}
			} else if err != nil || again.ID != first.ID || again.LastResponse.Header.Get("Idempotent-Replayed") != "true" {
				t.Fatalf("same key again: got %v, %v, want %s replayed", again, err, first.ID)
			}
			if e := b.ledgerEntry(t, "k3ds"); e.Effects != 1 || e.Status != string(tc.wantStatus) {
				t.Fatalf("ledger: got %d effects, status %q, want 1 in %s", e.Effects, e.Status, tc.wantStatus)
			}

			// Reads show the PaymentIntent in its status.
			got, err := b.pi.Get(first.ID, nil)
			if err != nil || got.Status != tc.wantStatus {
				t.Fatalf("retrieve: got %v, %v, want %s", got, err, tc.wantStatus)
			}
			if tc.wantCode != "" && (got.LastPaymentError == nil || string(got.LastPaymentError.Code) != tc.wantCode) {
				t.Fatalf("retrieve: got last_payment_error %+v, want %s", got.LastPaymentError, tc.wantCode)
			}
			if ids := listIDs(t, b, &stripe.PaymentIntentListParams{}); !equal(ids, []string{first.ID}) {
				t.Fatalf("list: got %v, want [%s]", ids, first.ID)
			}
			if ids := searchIDs(t, b, "status:'"+string(tc.wantStatus)+"'", 0); !equal(ids, []string{first.ID}) {
				t.Fatalf("search by status: got %v, want [%s]", ids, first.ID)
			}
		})
	}
}
