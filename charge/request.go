package charge

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Request is a validated request for a new charge.
type Request struct {
	Amount        int64
	Currency      string
	PaymentMethod string
	Customer      string
	Reference     string
	Initiator     Initiator
	ReattemptMode ReattemptMode
	Metadata      map[string]string
}

// ValidationError says which parameter of a request is wrong and why. Code is stable and
// meant for programs; Message is for people.
type ValidationError struct {
	Param   string
	Code    string
	Message string
}

// Error names the parameter and the rule it broke.
func (e *ValidationError) Error() string {
	return fmt.Sprintf("charge: invalid %s: %s", e.Param, e.Message)
}

// Validation error codes.
const (
	CodeParameterMissing = "parameter_missing"
	CodeParameterInvalid = "parameter_invalid"
	CodeAmountTooLarge   = "amount_too_large"
	CodeCardData         = "card_data_not_accepted"
)

// Limits bounds what a request may ask for.
type Limits struct {
	// MaxAmount is the largest amount accepted, in minor units.
	MaxAmount int64
}

// Metadata limits, as Stripe's.
const (
	maxMetadataKeys     = 50
	maxMetadataKeyLen   = 40
	maxMetadataValueLen = 500
	maxIDLen            = 255
)

var (
	paymentMethodRE = regexp.MustCompile(`^pm_[A-Za-z0-9_]{1,250}$`)
	customerRE      = regexp.MustCompile(`^cus_[A-Za-z0-9_]{1,250}$`)
)

// Validate checks r against the rules of the contract and returns a *ValidationError for the
// first rule broken.
func (r *Request) Validate(lim Limits) error {
	switch {
	case r.Amount <= 0:
		return &ValidationError{"amount", CodeParameterInvalid, "amount must be a positive integer in minor units"}
	case lim.MaxAmount > 0 && r.Amount > lim.MaxAmount:
		return &ValidationError{"amount", CodeAmountTooLarge, fmt.Sprintf("amount must be at most %d", lim.MaxAmount)}
	case r.Currency == "":
		return &ValidationError{"currency", CodeParameterMissing, "currency is required"}
	case !IsCurrency(r.Currency):
		return &ValidationError{"currency", CodeParameterInvalid, "currency must be a lowercase ISO 4217 code"}
	case r.PaymentMethod == "":
		return &ValidationError{"payment_method", CodeParameterMissing, "payment_method is required"}
	case !paymentMethodRE.MatchString(r.PaymentMethod):
		return &ValidationError{"payment_method", CodeParameterInvalid, "payment_method must be a processor payment method id (pm_...)"}
	case r.Customer != "" && !customerRE.MatchString(r.Customer):
		return &ValidationError{"customer", CodeParameterInvalid, "customer must be a processor customer id (cus_...)"}
	case len(r.Reference) > maxIDLen || !printable(r.Reference):
		return &ValidationError{"reference", CodeParameterInvalid, "reference must be at most 255 printable characters"}
	}
	switch r.Initiator {
	case InitiatorCustomer:
	case InitiatorMerchant:
		if r.Customer == "" {
			return &ValidationError{"customer", CodeParameterMissing, `initiator "merchant" requires customer (a saved card the cardholder agreed to have charged)`}
		}
	case "":
		return &ValidationError{"initiator", CodeParameterMissing, `initiator is required ("customer" or "merchant")`}
	default:
		return &ValidationError{"initiator", CodeParameterInvalid, `initiator must be "customer" or "merchant"`}
	}
	switch r.ReattemptMode {
	case "":
		r.ReattemptMode = ReattemptManual
	case ReattemptManual:
	case ReattemptAuto:
		if r.Initiator != InitiatorMerchant {
			return &ValidationError{"reattempt", CodeParameterInvalid, `reattempt "auto" is only for merchant-initiated charges`}
		}
	default:
		return &ValidationError{"reattempt", CodeParameterInvalid, `reattempt must be "manual" or "auto"`}
	}
	if len(r.Metadata) > maxMetadataKeys {
		return &ValidationError{"metadata", CodeParameterInvalid, fmt.Sprintf("metadata holds at most %d keys", maxMetadataKeys)}
	}
	for k, v := range r.Metadata {
		if k == "" || utf8.RuneCountInString(k) > maxMetadataKeyLen || strings.ContainsAny(k, "[]") {
			return &ValidationError{"metadata", CodeParameterInvalid, fmt.Sprintf("metadata keys are 1 to %d characters without brackets", maxMetadataKeyLen)}
		}
		if strings.ContainsRune(k, 0) || strings.ContainsRune(v, 0) {
			// PostgreSQL text and jsonb cannot hold U+0000.
			return &ValidationError{"metadata", CodeParameterInvalid, "metadata keys and values may not contain the NUL character (U+0000)"}
		}
		if utf8.RuneCountInString(v) > maxMetadataValueLen {
			return &ValidationError{"metadata[" + k + "]", CodeParameterInvalid, fmt.Sprintf("metadata values are at most %d characters", maxMetadataValueLen)}
		}
	}
	return nil
}

// IsPaymentMethodID reports whether s has the form of a processor payment method id.
func IsPaymentMethodID(s string) bool { return paymentMethodRE.MatchString(s) }

func printable(s string) bool {
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}
