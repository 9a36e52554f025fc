package reconcile

import (
	"strings"

	"github.com/paygate/paygate/processor"
)

// Fields of a PaymentIntent compared with its charge.
const (
	fieldChargeID      = "charge_id"
	fieldRootChargeID  = "root_charge_id"
	fieldAmount        = "amount"
	fieldCurrency      = "currency"
	fieldCustomer      = "customer"
	fieldPaymentMethod = "payment_method"
)

// mismatch returns the fields in which a PaymentIntent differs from the charge it should be:
// paygate's charge id (and root charge id) in the metadata, amount, currency, customer and
// payment method. None means the PaymentIntent is the charge's.
func mismatch(c Charge, in processor.Intent) []string {
	var out []string
	if in.ChargeID != c.ID {
		out = append(out, fieldChargeID)
	}
	if in.RootChargeID != c.RootChargeID {
		out = append(out, fieldRootChargeID)
	}
	if in.Amount != c.Amount {
		out = append(out, fieldAmount)
	}
	if !strings.EqualFold(in.Currency, c.Currency) {
		out = append(out, fieldCurrency)
	}
	if in.Customer != c.Customer {
		out = append(out, fieldCustomer)
	}
	if in.PaymentMethod != c.PaymentMethod {
		out = append(out, fieldPaymentMethod)
	}
	return out
}
