package sim

import (
	"cmp"
	"strings"
	"time"
)

// PaymentIntent statuses the simulator produces.
const (
	statusSucceeded             = "succeeded"
	statusProcessing            = "processing"
	statusRequiresAction        = "requires_action"
	statusRequiresPaymentMethod = "requires_payment_method"
	statusRequiresConfirmation  = "requires_confirmation"
)

// intent is a stored PaymentIntent.
type intent struct {
	seq          uint64
	id           string
	clientSecret string
	created      time.Time
	searchableAt time.Time

	amount             int64
	currency           string
	customer           string
	description        string
	metadata           map[string]string
	method             *testMethod
	paymentMethodTypes []string
	setupFutureUsage   string
	returnURL          string // where a 3D Secure redirect returns; empty for the SDK flow
	idempotencyKey     string

	status    string
	lastError *decline
	charge    *charge
	// settleAt is when a processing intent settles.
	settleAt time.Time
}

// charge is the intent's latest charge, kept for expand[]=latest_charge.
type charge struct {
	id      string
	created time.Time
	status  string // succeeded, pending, failed
	decline *decline
}

// settle moves a processing intent to its final state once its time has come.
func (pi *intent) settle(now time.Time) {
	if pi.status != statusProcessing || pi.settleAt.IsZero() || now.Before(pi.settleAt) {
		return
	}
	if pi.method != nil && pi.method.settleDecline {
		d := pi.method.decline
		pi.status = statusRequiresPaymentMethod
		pi.lastError = &d
		pi.charge.status = "failed"
		pi.charge.decline = &d
		return
	}
	pi.status = statusSucceeded
	pi.charge.status = "succeeded"
}

// expansion names what a request asked to expand on a PaymentIntent.
type expansion struct {
	paymentMethod, latestCharge, customer bool
}

// expandable lists what a PaymentIntent can expand; prefix is "data." for
// lists and searches.
func parseExpand(values []string, prefix string) (expansion, *apiError) {
	var x expansion
	for _, v := range values {
		switch strings.TrimPrefix(v, prefix) {
		case "payment_method":
			x.paymentMethod = true
		case "latest_charge":
			x.latestCharge = true
		case "customer":
			x.customer = true
		default:
			if prefix != "" && !strings.HasPrefix(v, prefix) {
				return x, invalidRequest("", "expand",
					"This property cannot be expanded (%s). You may want to try expanding '%s%s' instead.", v, prefix, v)
			}
			return x, invalidRequest("", "expand", "This property cannot be expanded (%s).", v)
		}
	}
	return x, nil
}

// paymentIntentJSON is a PaymentIntent as Stripe renders it.
type paymentIntentJSON struct {
	ID                                string            `json:"id"`
	Object                            string            `json:"object"`
	Amount                            int64             `json:"amount"`
	AmountCapturable                  int64             `json:"amount_capturable"`
	AmountDetails                     map[string]any    `json:"amount_details"`
	AmountReceived                    int64             `json:"amount_received"`
	Application                       *string           `json:"application"`
	ApplicationFeeAmount              *int64            `json:"application_fee_amount"`
	AutomaticPaymentMethods           any               `json:"automatic_payment_methods"`
	CanceledAt                        *int64            `json:"canceled_at"`
	CancellationReason                *string           `json:"cancellation_reason"`
	CaptureMethod                     string            `json:"capture_method"`
	ClientSecret                      string            `json:"client_secret"`
	ConfirmationMethod                string            `json:"confirmation_method"`
	Created                           int64             `json:"created"`
	Currency                          string            `json:"currency"`
	Customer                          any               `json:"customer"`
	Description                       *string           `json:"description"`
	Invoice                           *string           `json:"invoice"`
	LastPaymentError                  *lastErrorJSON    `json:"last_payment_error"`
	LatestCharge                      any               `json:"latest_charge"`
	Livemode                          bool              `json:"livemode"`
	Metadata                          map[string]string `json:"metadata"`
	NextAction                        any               `json:"next_action"`
	OnBehalfOf                        *string           `json:"on_behalf_of"`
	PaymentMethod                     any               `json:"payment_method"`
	PaymentMethodConfigurationDetails any               `json:"payment_method_configuration_details"`
	PaymentMethodOptions              map[string]any    `json:"payment_method_options"`
	PaymentMethodTypes                []string          `json:"payment_method_types"`
	Processing                        any               `json:"processing"`
	ReceiptEmail                      *string           `json:"receipt_email"`
	Review                            *string           `json:"review"`
	SetupFutureUsage                  *string           `json:"setup_future_usage"`
	Shipping                          any               `json:"shipping"`
	Source                            any               `json:"source"`
	StatementDescriptor               *string           `json:"statement_descriptor"`
	StatementDescriptorSuffix         *string           `json:"statement_descriptor_suffix"`
	Status                            string            `json:"status"`
	TransferData                      any               `json:"transfer_data"`
	TransferGroup                     *string           `json:"transfer_group"`
}

// lastErrorJSON is a PaymentIntent's last_payment_error.
type lastErrorJSON struct {
	AdviceCode         string             `json:"advice_code,omitempty"`
	Charge             string             `json:"charge,omitempty"`
	Code               string             `json:"code"`
	DeclineCode        string             `json:"decline_code,omitempty"`
	DocURL             string             `json:"doc_url"`
	Message            string             `json:"message"`
	NetworkAdviceCode  string             `json:"network_advice_code,omitempty"`
	NetworkDeclineCode string             `json:"network_decline_code,omitempty"`
	Param              string             `json:"param,omitempty"`
	PaymentMethod      *paymentMethodJSON `json:"payment_method,omitempty"`
	Type               string             `json:"type"`
}

func optString(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// renderIntent renders pi; x says what to expand.
func (s *Server) renderIntent(pi *intent, x expansion) paymentIntentJSON {
	out := paymentIntentJSON{
		ID:                 pi.id,
		Object:             "payment_intent",
		Amount:             pi.amount,
		AmountDetails:      map[string]any{"tip": map[string]any{}},
		CaptureMethod:      "automatic",
		ClientSecret:       pi.clientSecret,
		ConfirmationMethod: "automatic",
		Created:            pi.created.Unix(),
		Currency:           pi.currency,
		Description:        optString(pi.description),
		Metadata:           pi.metadata,
		PaymentMethodOptions: map[string]any{"card": map[string]any{
			"installments":           nil,
			"mandate_options":        nil,
			"network":                nil,
			"request_three_d_secure": "automatic",
		}},
		PaymentMethodTypes: pi.paymentMethodTypes,
		SetupFutureUsage:   optString(pi.setupFutureUsage),
		Status:             pi.status,
	}
	if pi.status == statusSucceeded {
		out.AmountReceived = pi.amount
	}
	if pi.customer != "" {
		out.Customer = pi.customer
		if x.customer {
			out.Customer = map[string]any{"id": pi.customer, "object": "customer"}
		}
	}
	if pi.method != nil {
		out.PaymentMethod = pi.method.id
		if x.paymentMethod {
			out.PaymentMethod = s.renderPaymentMethod(*pi.method)
		}
	}
	if pi.charge != nil {
		out.LatestCharge = pi.charge.id
		if x.latestCharge {
			out.LatestCharge = s.renderCharge(pi)
		}
	}
	if pi.lastError != nil {
		out.LastPaymentError = s.renderLastError(pi)
	}
	switch pi.status {
	case statusRequiresAction:
		// As at Stripe: a redirect when the confirmation named a return_url, else the
		// data Stripe.js needs to run the 3D Secure challenge.
		hosted := "https://hooks.stripe.com/3d_secure_2/hosted?payment_intent=" + pi.id
		if pi.returnURL != "" {
			out.NextAction = map[string]any{
				"type":            "redirect_to_url",
				"redirect_to_url": map[string]any{"return_url": pi.returnURL, "url": hosted},
			}
		} else {
			out.NextAction = map[string]any{
				"type":           "use_stripe_sdk",
				"use_stripe_sdk": map[string]any{"type": "three_d_secure_redirect", "stripe_js": hosted},
			}
		}
	case statusProcessing:
		out.Processing = map[string]any{"type": "card", "card": map[string]any{}}
	}
	return out
}

func (s *Server) renderLastError(pi *intent) *lastErrorJSON {
	d := pi.lastError
	le := &lastErrorJSON{
		AdviceCode:         d.adviceCode,
		Code:               d.code,
		DeclineCode:        d.declineCode,
		DocURL:             docURL(d.code),
		Message:            d.message,
		NetworkAdviceCode:  d.networkAdviceCode,
		NetworkDeclineCode: d.networkDeclineCode,
		Param:              d.param,
		Type:               typeCard,
	}
	if pi.charge != nil {
		le.Charge = pi.charge.id
	}
	if pi.method != nil {
		pm := s.renderPaymentMethod(*pi.method)
		le.PaymentMethod = &pm
	}
	return le
}

// renderCharge renders the intent's latest charge (expand[]=latest_charge).
func (s *Server) renderCharge(pi *intent) map[string]any {
	ch := pi.charge
	outcome := map[string]any{
		"network_status": "approved_by_network",
		"reason":         nil,
		"risk_level":     "normal",
		"risk_score":     20,
		"seller_message": "Payment complete.",
		"type":           "authorized",
	}
	var failureCode, failureMessage any
	if d := ch.decline; d != nil {
		reason := cmp.Or(d.declineCode, d.code)
		outcome["network_status"] = "declined_by_network"
		outcome["reason"] = reason
		outcome["seller_message"] = "The bank returned the decline code `" + reason + "`."
		outcome["type"] = "issuer_declined"
		if d.blocked() {
			outcome["network_status"] = "not_sent_to_network"
			outcome["risk_level"] = "highest"
			outcome["type"] = "blocked"
		}
		for k, v := range map[string]string{
			"network_decline_code": d.networkDeclineCode,
			"network_advice_code":  d.networkAdviceCode,
			"advice_code":          d.adviceCode,
		} {
			if v != "" {
				outcome[k] = v
			}
		}
		failureCode, failureMessage = d.code, d.message
	}
	if ch.status == "pending" {
		outcome = nil
	}
	c := map[string]any{
		"id":                  ch.id,
		"object":              "charge",
		"amount":              pi.amount,
		"amount_captured":     0,
		"amount_refunded":     0,
		"balance_transaction": nil,
		"captured":            ch.status == "succeeded",
		"created":             ch.created.Unix(),
		"currency":            pi.currency,
		"customer":            optString(pi.customer),
		"disputed":            false,
		"failure_code":        failureCode,
		"failure_message":     failureMessage,
		"livemode":            false,
		"metadata":            pi.metadata,
		"outcome":             outcome,
		"paid":                ch.status == "succeeded",
		"payment_intent":      pi.id,
		"refunded":            false,
		"status":              ch.status,
	}
	if ch.status == "succeeded" {
		c["amount_captured"] = pi.amount
	}
	if m := pi.method; m != nil {
		c["payment_method"] = m.id
		c["payment_method_details"] = map[string]any{
			"type": "card",
			"card": map[string]any{
				"brand":       m.card.brand,
				"country":     m.card.country,
				"exp_month":   m.card.expMonth,
				"exp_year":    m.card.expYear,
				"fingerprint": s.fingerprint(m.card),
				"funding":     m.card.funding,
				"last4":       m.card.last4,
				"network":     m.card.brand,
			},
		}
	}
	return c
}
