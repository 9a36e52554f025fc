package sim

// decline is an issuer's refusal as Stripe reports it: the error code, the
// decline code, and the newer network fields.
type decline struct {
	code               string // card_declined, expired_card, incorrect_cvc, ...
	declineCode        string
	message            string
	param              string
	networkDeclineCode string // e.g. Visa "05", "51", "N7"
	networkAdviceCode  string // Mastercard Merchant Advice Code, e.g. "03"
	adviceCode         string // Stripe's advice_code: try_again_later, do_not_try_again, confirm_card_data
}

// genericDeclineMessage is the message of a decline whose code has no message of its own.
const genericDeclineMessage = "Your card was declined."

// declineMessages holds the customer-facing message Stripe gives per decline
// code (or card error code); codes not listed get genericDeclineMessage.
var declineMessages = map[string]string{
	"authentication_required":    "Your card was declined. This transaction requires authentication.",
	"authentication_not_handled": "Your card was declined. This transaction requires authentication.",
	"card_decline_rate_limit_exceeded": "You have exceeded the maximum number of declines on this card in the last 24 hour period. " +
		"Please contact us via https://support.stripe.com/contact if you need further assistance.",
	"incorrect_address":                     "Your card's address is incorrect.",
	"mobile_device_authentication_required": "Your card was declined. This transaction requires authentication.",
	"card_not_supported":                    "Your card does not support this type of purchase.",
	"card_velocity_exceeded":                "Your card was declined for making repeated attempts too frequently or exceeding its amount limit.",
	"currency_not_supported":                "Your card does not support this currency.",
	"duplicate_transaction":                 "A transaction with identical amount and credit card information was submitted very recently.",
	"expired_card":                          "Your card has expired.",
	"incorrect_cvc":                         "Your card's security code is incorrect.",
	"incorrect_number":                      "Your card number is incorrect.",
	"incorrect_pin":                         "The PIN entered is incorrect.",
	"incorrect_zip":                         "Your card's postal code is incorrect.",
	"insufficient_funds":                    "Your card has insufficient funds.",
	"invalid_amount":                        "The payment amount is invalid, or exceeds the amount that is allowed.",
	"invalid_cvc":                           "Your card's security code is invalid.",
	"invalid_expiry_month":                  "Your card's expiration month is invalid.",
	"invalid_expiry_year":                   "Your card's expiration year is invalid.",
	"invalid_number":                        "Your card number is invalid.",
	"issuer_not_available":                  "The card issuer could not be reached. Try again in a little bit.",
	"pin_try_exceeded":                      "The allowable number of PIN tries was exceeded.",
	"processing_error":                      "An error occurred while processing your card. Try again in a little bit.",
	"reenter_transaction":                   "The payment could not be processed by the issuer. Try again in a little bit.",
	"try_again_later":                       "Your card was declined. Try again in a little bit.",
	"testmode_decline":                      "Your card was declined. Your request was in test mode, but used a non test card.",
	"withdrawal_count_limit_exceeded":       "Your card has exceeded its withdrawal limit.",
}

// ownErrorCode lists decline codes that Stripe reports with an error code of
// their own instead of card_declined, and the parameter it names.
var ownErrorCode = map[string]string{
	"authentication_required": "",
	"incorrect_address":       "address_line1",
	"expired_card":            "exp_month",
	"incorrect_cvc":           "cvc",
	"incorrect_number":        "number",
	"incorrect_zip":           "address_zip",
	"invalid_cvc":             "cvc",
	"invalid_expiry_month":    "exp_month",
	"invalid_expiry_year":     "exp_year",
	"invalid_number":          "number",
	"processing_error":        "",
}

// codeOnly lists the card error codes Stripe sends without a decline_code.
var codeOnly = map[string]bool{
	"card_decline_rate_limit_exceeded": true,
}

// newDecline returns the decline Stripe reports for declineCode: code card_declined with
// that decline_code, or Stripe's own error code for it (with the decline code too, as
// Stripe's test cards answer), or, for a code Stripe sends alone
// (card_decline_rate_limit_exceeded), that code without a decline_code.
func newDecline(declineCode string) decline {
	d := decline{code: "card_declined", declineCode: declineCode, message: genericDeclineMessage}
	if m, ok := declineMessages[declineCode]; ok {
		d.message = m
	}
	if param, ok := ownErrorCode[declineCode]; ok {
		d.code = declineCode
		d.param = param
	}
	if codeOnly[declineCode] {
		d.code, d.declineCode = declineCode, ""
	}
	return d
}

// blocked reports whether d is the processor's own refusal, never sent to the card
// network: a Radar block (fraudulent, without a network's code) or Stripe's limit on a
// card's declines.
func (d decline) blocked() bool {
	return d.declineCode == "fraudulent" && d.networkDeclineCode == "" || d.code == "card_decline_rate_limit_exceeded"
}

// apiError renders d as the 402 card_error, without the objects attached.
func (d decline) apiError() *apiError {
	return &apiError{
		status:             402,
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
}
