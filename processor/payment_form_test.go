package processor

import (
	"testing"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/form"
)

// paymentIntentParams is p as stripe-go's own params: what paymentForm must encode alike.
func paymentIntentParams(p PaymentParams) *stripe.PaymentIntentParams {
	params := &stripe.PaymentIntentParams{
		Amount:             stripe.Int64(p.Amount),
		Currency:           stripe.String(p.Currency),
		PaymentMethod:      stripe.String(p.PaymentMethod),
		PaymentMethodTypes: []*string{stripe.String("card")},
		Confirm:            stripe.Bool(true),
	}
	if p.Customer != "" {
		params.Customer = stripe.String(p.Customer)
	}
	if p.OffSession {
		params.OffSession = stripe.Bool(true)
		params.ErrorOnRequiresAction = stripe.Bool(true)
	}
	params.AddMetadata(MetadataChargeID, p.ChargeID)
	if p.RootChargeID != "" {
		params.AddMetadata(MetadataRootChargeID, p.RootChargeID)
	}
	return params
}

// TestPaymentFormMatchesStripeGo checks that the create request's body is byte for byte the
// one stripe-go's form encoder makes of the equivalent params: a retry under the same key
// sends the same parameters, whichever way they were built.
func TestPaymentFormMatchesStripeGo(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		p    PaymentParams
	}{
		{"customer-initiated", PaymentParams{Key: "pg_ch_1", ChargeID: "ch_1", Amount: 1000, Currency: "usd", PaymentMethod: "pm_card_visa"}},
		{"merchant-initiated", PaymentParams{Key: "pg_ch_2", ChargeID: "ch_2", Amount: 1, Currency: "eur", PaymentMethod: "pm_x",
			Customer: "cus_1", OffSession: true}},
		{"reattempt", PaymentParams{Key: "pg_ch_3", ChargeID: "ch_3", RootChargeID: "ch_0", Amount: 99999999, Currency: "jpy",
			PaymentMethod: "pm_y", Customer: "cus_2", OffSession: true}},
		{"customer without off-session", PaymentParams{ChargeID: "ch_4", Amount: 5, Currency: "usd", PaymentMethod: "pm_z", Customer: "cus_3"}},
		{"empty and escaped values", PaymentParams{Amount: -1, Currency: "", PaymentMethod: "pm a&b=c", Customer: "cus_ü+%"}},
		{"zero", PaymentParams{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			want := &form.Values{}
			form.AppendTo(want, paymentIntentParams(tc.p))
			if got := paymentForm(tc.p).Encode(); got != want.Encode() {
				t.Fatalf("got  %s\nwant %s", got, want.Encode())
			}
		})
	}
}
