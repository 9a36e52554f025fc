package processor

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/stripe/stripe-go/v76"
)

// IntentFromJSON decodes a PaymentIntent as the processor renders it — the data.object of a
// payment_intent.* event — into paygate's view, the decline's newer fields included. It is
// what the payload says, never proof of the PaymentIntent's state: only a read is. It returns
// an error for a body that is not a PaymentIntent with an id.
func IntentFromJSON(raw []byte) (Intent, error) {
	var pi stripe.PaymentIntent
	if err := json.Unmarshal(raw, &pi); err != nil {
		return Intent{}, fmt.Errorf("processor: payment intent: %w", err)
	}
	if pi.ID == "" || (pi.Object != "" && pi.Object != "payment_intent") {
		return Intent{}, errors.New("processor: payment intent: no payment_intent object with an id")
	}
	return intentOf(&pi, lastPaymentErrorOf(raw)), nil
}
