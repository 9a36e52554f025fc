package decline

import "strings"

// Hold is what a decline forbids beyond its class, or how far its class's block reaches: a
// restriction that depends on the attempt asked about (its payment method, expiry or
// currency), lasts a while, or stops the declined charge's chain. Its string forms are
// stable: they are kept with the card's history. Each decline carries at most one.
//
// The zero Hold adds nothing and narrows nothing: the class alone decides, as for an
// attempt recorded before holds existed. A hold that does not belong to the attempt's class
// (a currency hold on a fix-data decline, say) is read as the zero Hold, except the two that
// add a restriction to any class ([HoldRateLimit], [HoldNoReattempt]).
type Hold string

// The holds.
const (
	// HoldNone: the class decides alone. On a [FixData] decline that is the expiry rule:
	// only another fingerprint or another expiry clears it.
	HoldNone Hold = ""
	// HoldPaymentMethod ([FixData]): the shopper entered data the issuer refused (CVC,
	// postal code, address, PIN, number, an expiry typed wrong). Only an attempt with the
	// same payment method (the same pm_ id) is refused: a new PaymentMethod is the data
	// entered again, the revalidation Visa asks for in category 3. When either payment
	// method is unknown, the expiry rule applies.
	HoldPaymentMethod Hold = "same_payment_method"
	// HoldExpiry ([FixData]): the card expired. An attempt with the same expiry is refused,
	// whatever payment method carries it; a new expiry (or another card) clears it.
	HoldExpiry Hold = "same_expiry"
	// HoldCard ([FixData]): only another card (Stripe's pin_try_exceeded: "the customer
	// must use another card"). Every attempt on the card is refused until an approval on it.
	HoldCard Hold = "another_card"
	// HoldCurrency ([Never]): the card does not support the charge's currency or this type
	// of purchase (Stripe's currency_not_supported, card_not_supported). Only attempts in
	// the same currency are refused, never; other charges on the card go on. paygate knows
	// no more of a purchase's type than its currency, so card_not_supported is read per
	// currency too. When either currency is unknown, the whole card is refused, as [Never].
	HoldCurrency Hold = "same_currency"
	// HoldRateLimit (any class): the processor refused the card for too many declines
	// (Stripe's card_decline_rate_limit_exceeded: "try again after 24 hours"). No attempt on
	// the card at that processor account for 24 hours from the refused attempt.
	HoldRateLimit Hold = "decline_rate_limit"
	// HoldNoReattempt (any class): the issuer saw an identical transaction very recently
	// (Stripe's duplicate_transaction): the declined charge may be a second payment of one
	// order. No reattempt of its chain, manual or automatic, is allowed; new charges on the
	// card are, since a new order is a new payment.
	HoldNoReattempt Hold = "possible_duplicate"
)

// ParseHold returns the hold whose string form is s; the empty string and every value this
// version does not know are [HoldNone]: the class's own rule.
func ParseHold(s string) Hold {
	h := Hold(s)
	switch h {
	case HoldPaymentMethod, HoldExpiry, HoldCard, HoldCurrency, HoldRateLimit, HoldNoReattempt:
		return h
	}
	return HoldNone
}

// String returns the stable form of h ("" for [HoldNone]).
func (h Hold) String() string { return string(h) }

// fits reports whether h applies to a decline of class c: the holds that narrow a class's
// block only on that class, the ones that add a restriction on any.
func (h Hold) fits(c Class) bool {
	switch h {
	case HoldPaymentMethod, HoldExpiry, HoldCard:
		return c == FixData
	case HoldCurrency:
		return c == Never
	case HoldRateLimit, HoldNoReattempt:
		return true
	}
	return false
}

// additive reports whether h adds a restriction whatever the class, rather than narrowing
// the class's own block.
func (h Hold) additive() bool { return h == HoldRateLimit || h == HoldNoReattempt }

// normalizeCurrency returns an ISO 4217 code as attempts compare it: lower case, without
// surrounding spaces.
func normalizeCurrency(s string) string { return strings.ToLower(strings.TrimSpace(s)) }
