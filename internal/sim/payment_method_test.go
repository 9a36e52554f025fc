package sim_test

import (
	"net/http"
	"testing"

	"github.com/stripe/stripe-go/v76"

	"github.com/paygate/paygate/internal/sim"
)

func TestPaymentMethodCards(t *testing.T) {
	t.Parallel()
	b := setup(t)
	cases := []struct {
		pm       string
		brand    stripe.PaymentMethodCardBrand
		last4    string
		expMonth int64
		expYear  int64
		funding  stripe.CardFunding
	}{
		{"pm_card_visa", "visa", "4242", 12, 2034, "credit"},
		{"pm_card_visa_debit", "visa", "5556", 12, 2034, "debit"},
		{"pm_card_mastercard", "mastercard", "4444", 12, 2034, "credit"},
		{"pm_card_amex", "amex", "8431", 12, 2034, "credit"},
		{"pm_card_chargeDeclinedInsufficientFunds", "visa", "9995", 12, 2034, "credit"},
		{"pm_sim_decline_insufficient_funds_mc_51", "mastercard", "4444", 12, 2034, "credit"},
		{"pm_sim_approve_visa_card12_exp0327", "visa", "0012", 3, 2027, "credit"},
		{"pm_sim_requires_action", "visa", "3184", 12, 2034, "credit"},
		{"pm_sim_requires_action_mc", "mastercard", "4444", 12, 2034, "credit"},
	}
	for _, tc := range cases {
		got, err := b.pm.Get(tc.pm, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.pm, err)
		}
		c := got.Card
		if got.ID != tc.pm || got.Type != stripe.PaymentMethodTypeCard || c == nil {
			t.Fatalf("%s: got %+v, want a card payment method", tc.pm, got)
		}
		if c.Brand != tc.brand || c.Last4 != tc.last4 || c.ExpMonth != tc.expMonth || c.ExpYear != tc.expYear ||
			c.Funding != tc.funding {
			t.Errorf("%s: got %s %s %d/%d %s, want %s %s %d/%d %s", tc.pm, c.Brand, c.Last4, c.ExpMonth, c.ExpYear,
				c.Funding, tc.brand, tc.last4, tc.expMonth, tc.expYear, tc.funding)
		}
		if len(c.Fingerprint) != 16 || c.Networks == nil || len(c.Networks.Available) != 1 ||
			string(c.Networks.Available[0]) != string(tc.brand) {
			t.Errorf("%s: got fingerprint %q networks %+v, want 16 characters and [%s]", tc.pm, c.Fingerprint, c.Networks, tc.brand)
		}
	}
}

func TestFingerprints(t *testing.T) {
	t.Parallel()
	b := setup(t)
	fp := func(pm string) string {
		t.Helper()
		got, err := b.pm.Get(pm, nil)
		if err != nil {
			t.Fatalf("%s: %v", pm, err)
		}
		return got.Card.Fingerprint
	}
	same := [][]string{
		{"pm_card_visa", "pm_card_us", "pm_sim_approve", "pm_sim_approve_visa", "pm_sim_decline_do_not_honor_visa_05",
			"pm_sim_processing", "pm_sim_approve_exp0129"},
		{"pm_card_mastercard", "pm_sim_decline_do_not_try_again_mc_mac03", "pm_sim_approve_mastercard"},
		{"pm_card_chargeDeclinedInsufficientFunds", "pm_card_visa_chargeDeclinedInsufficientFunds"},
		// cardN names the card number, whatever the outcome.
		{"pm_sim_decline_expired_card_visa_54_card7", "pm_sim_approve_visa_card7_exp0130", "pm_sim_requires_action_card7"},
		// A card that asks for 3-D Secure is another card: Stripe's 4000 0027 6000 3184.
		{"pm_card_authenticationRequired", "pm_sim_requires_action", "pm_sim_requires_action_visa"},
		{"pm_sim_requires_action_mc", "pm_sim_requires_action_mastercard"},
	}
	seen := map[string]string{}
	for _, group := range same {
		want := fp(group[0])
		for _, pm := range group[1:] {
			if got := fp(pm); got != want {
				t.Errorf("got fingerprint %s for %s, want %s as for %s (the same card)", got, pm, want, group[0])
			}
		}
		if other, dup := seen[want]; dup {
			t.Errorf("got fingerprint %s for %s and %s, want different cards to differ", want, group[0], other)
		}
		seen[want] = group[0]
	}
	if fp("pm_sim_approve_visa_card1") == fp("pm_sim_approve_visa_card2") {
		t.Error("got card1 and card2 with one fingerprint, want two cards")
	}
	// Fingerprints are per account, as at Stripe.
	other := setup(t, withConfig(func(c *sim.Config) { c.AccountID = "acct_simOther" }))
	got, err := other.pm.Get("pm_card_visa", nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.Card.Fingerprint == fp("pm_card_visa") {
		t.Errorf("got the same fingerprint at another account, want it scoped to the account")
	}
}

func TestPaymentMethodMissing(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for _, id := range []string{"pm_1Nonexistent", "pm_sim_unknown", "pm_sim_decline_x_visa_05_visa", "pm_sim_approve_mac03_visa"} {
		_, err := b.pm.Get(id, nil)
		se := stripeError(t, err)
		if se.HTTPStatusCode != http.StatusNotFound || se.Code != stripe.ErrorCodeResourceMissing {
			t.Errorf("%s: got %d %s, want 404 resource_missing", id, se.HTTPStatusCode, se.Code)
		}
	}
}
