package decline

import (
	"errors"
	"fmt"
)

// Class is the reattempt policy a decline falls under. Its string forms are
// stable: they appear in API bodies, in the database and in the report.
type Class string

// The six classes, from the most to the least restrictive.
const (
	// Never: the issuer will never approve; no new charge on that card at
	// that processor account, ever.
	Never Class = "never"
	// FixData: only a payment method with another fingerprint or another
	// expiry may be charged.
	FixData Class = "fix_data"
	// Authenticate: the issuer asks for the cardholder's authentication
	// (3-D Secure, Visa 1A). The card is not blocked: new charges may be
	// made, and one the cardholder authenticates can be approved. A
	// reattempt of the declined charge, merchant-initiated and so without
	// the cardholder, cannot authenticate: it has no schedule.
	Authenticate Class = "authenticate"
	// Funds: not enough money or credit now; reattempt on days +1, +3, +5,
	// +7, +10 and +14, never before a Mastercard advice delay.
	Funds Class = "funds"
	// IssuerTransient: the issuer could not answer; reattempt at +1 hour and
	// on days +1, +3 and +7.
	IssuerTransient Class = "issuer_transient"
	// Generic: no usable reason, the default for unknown codes; reattempt
	// on days +2, +5, +9 and +14.
	Generic Class = "generic"
)

// ErrUnknownClass is returned by [ParseClass] for a string that names no
// class.
var ErrUnknownClass = errors.New("decline: unknown class")

// ParseClass returns the class whose string form is s. It returns an error
// wrapping [ErrUnknownClass] for anything else, the empty string included.
func ParseClass(s string) (Class, error) {
	c := Class(s)
	if !c.Valid() {
		return "", fmt.Errorf("%w: %q", ErrUnknownClass, s)
	}
	return c, nil
}

// Valid reports whether c is one of the six classes.
func (c Class) Valid() bool {
	switch c {
	case Never, FixData, Authenticate, Funds, IssuerTransient, Generic:
		return true
	}
	return false
}

// Retryable reports whether c has a reattempt schedule: [Funds],
// [IssuerTransient] and [Generic].
func (c Class) Retryable() bool {
	switch c {
	case Funds, IssuerTransient, Generic:
		return true
	}
	return false
}

// VisaCategory returns the Visa decline category that matches c: 1 for
// [Never], 3 for [FixData] and [Authenticate] (Visa lists 1A, additional
// customer authentication required, in category 3), 2 for [Funds] and
// [IssuerTransient], and 4 for [Generic] and anything that is not a class.
func (c Class) VisaCategory() Category {
	switch c {
	case Never:
		return CategoryNeverApprove
	case FixData, Authenticate:
		return CategoryDataQuality
	case Funds, IssuerTransient:
		return CategoryCannotApproveNow
	}
	return CategoryGeneric
}

// String returns the stable lowercase form of c.
func (c Class) String() string { return string(c) }

// orGeneric returns c, or [Generic] when c is not a class: a decline
// recorded without a usable class is treated as Visa treats an unknown code.
func (c Class) orGeneric() Class {
	if c.Valid() {
		return c
	}
	return Generic
}

// Category is a Visa decline category, 1 to 4, as in Visa's excessive
// reattempt rules. It is [CategoryNone] (0) when the card is not a Visa card.
type Category uint8

// The Visa decline categories.
const (
	// CategoryNone is recorded for declines on other networks.
	CategoryNone Category = 0
	// CategoryNeverApprove is Visa category 1: the issuer will never
	// approve.
	CategoryNeverApprove Category = 1
	// CategoryCannotApproveNow is Visa category 2: the issuer cannot
	// approve at this time.
	CategoryCannotApproveNow Category = 2
	// CategoryDataQuality is Visa category 3: the issuer cannot approve
	// with these details.
	CategoryDataQuality Category = 3
	// CategoryGeneric is Visa category 4: generic response codes, and every
	// code not listed in the first three.
	CategoryGeneric Category = 4
)
