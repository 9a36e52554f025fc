package sim

import "net/http"

// paymentMethodJSON is a card PaymentMethod as Stripe renders it.
type paymentMethodJSON struct {
	ID             string             `json:"id"`
	Object         string             `json:"object"`
	AllowRedisplay string             `json:"allow_redisplay"`
	BillingDetails billingDetailsJSON `json:"billing_details"`
	Card           paymentCardJSON    `json:"card"`
	Created        int64              `json:"created"`
	Customer       *string            `json:"customer"`
	Livemode       bool               `json:"livemode"`
	Metadata       map[string]string  `json:"metadata"`
	Type           string             `json:"type"`
}

type billingDetailsJSON struct {
	Address addressJSON `json:"address"`
	Email   *string     `json:"email"`
	Name    *string     `json:"name"`
	Phone   *string     `json:"phone"`
}

type addressJSON struct {
	City       *string `json:"city"`
	Country    *string `json:"country"`
	Line1      *string `json:"line1"`
	Line2      *string `json:"line2"`
	PostalCode *string `json:"postal_code"`
	State      *string `json:"state"`
}

type paymentCardJSON struct {
	Brand             string           `json:"brand"`
	Checks            cardChecksJSON   `json:"checks"`
	Country           string           `json:"country"`
	DisplayBrand      string           `json:"display_brand"`
	ExpMonth          int              `json:"exp_month"`
	ExpYear           int              `json:"exp_year"`
	Fingerprint       string           `json:"fingerprint"`
	Funding           string           `json:"funding"`
	GeneratedFrom     any              `json:"generated_from"`
	Last4             string           `json:"last4"`
	Networks          cardNetworksJSON `json:"networks"`
	ThreeDSecureUsage map[string]bool  `json:"three_d_secure_usage"`
	Wallet            any              `json:"wallet"`
}

type cardChecksJSON struct {
	AddressLine1Check      *string `json:"address_line1_check"`
	AddressPostalCodeCheck *string `json:"address_postal_code_check"`
	CVCCheck               *string `json:"cvc_check"`
}

type cardNetworksJSON struct {
	Available []string `json:"available"`
	Preferred *string  `json:"preferred"`
}

// fingerprint is the card's fingerprint at this account: the same card number
// always gives the same fingerprint, as at Stripe.
func (s *Server) fingerprint(c card) string {
	return digestID(16, "fingerprint", s.account, c.identity)
}

// renderPaymentMethod renders a payment method as GET /v1/payment_methods/{id}
// answers it.
func (s *Server) renderPaymentMethod(t testMethod) paymentMethodJSON {
	cvc := "pass"
	return paymentMethodJSON{
		ID:             t.id,
		Object:         "payment_method",
		AllowRedisplay: "unspecified",
		Card: paymentCardJSON{
			Brand:             t.card.brand,
			Checks:            cardChecksJSON{CVCCheck: &cvc},
			Country:           t.card.country,
			DisplayBrand:      t.card.brand,
			ExpMonth:          t.card.expMonth,
			ExpYear:           t.card.expYear,
			Fingerprint:       s.fingerprint(t.card),
			Funding:           t.card.funding,
			Last4:             t.card.last4,
			Networks:          cardNetworksJSON{Available: []string{t.card.brand}},
			ThreeDSecureUsage: map[string]bool{"supported": true},
		},
		Created:  s.started.Unix(),
		Livemode: false,
		Metadata: map[string]string{},
		Type:     "card",
	}
}

var retrieveParams = map[string]paramKind{"expand": list}

// handleGetPaymentMethod serves GET /v1/payment_methods/{id}.
func (s *Server) handleGetPaymentMethod(r *http.Request, id string) response {
	if _, e := parseParams(r.URL.Query(), retrieveParams); e != nil {
		return errorResponse(e)
	}
	t, ok := lookupMethod(id)
	if !ok {
		return errorResponse(resourceMissing(http.StatusNotFound, "payment_method", "PaymentMethod", id))
	}
	return jsonResponse(http.StatusOK, s.renderPaymentMethod(t))
}
