package sim

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// outcomeKind is what confirming a PaymentIntent with a payment method does.
type outcomeKind int

const (
	approve outcomeKind = iota + 1
	declined
	// authenticate: the card asks for 3D Secure. On session without
	// error_on_requires_action the PaymentIntent waits in requires_action;
	// otherwise the payment fails with authentication_required, unless
	// offSessionApproves.
	authenticate
	// processing: the PaymentIntent stays in processing for the
	// configured time, then succeeds (or fails with settleDecline).
	processing
)

// card is the card behind a payment method. Only what Stripe shows is kept:
// never a full card number.
type card struct {
	brand    string // visa, mastercard, amex, discover, diners, jcb, unionpay
	last4    string
	funding  string // credit, debit, prepaid
	country  string
	expMonth int
	expYear  int
	// identity names the card number; equal identities give equal
	// fingerprints.
	identity string
}

// testMethod is a payment method id resolved to its card and behaviour.
type testMethod struct {
	id      string
	card    card
	kind    outcomeKind
	decline decline // declined, and processing that settles as a decline
	// settleDecline marks a processing outcome that settles as decline.
	settleDecline bool
	// offSessionApproves: an authenticate card that succeeds off session.
	offSessionApproves bool
	// first > 0: the outcome applies to the first `first` confirmations with
	// this id; later ones are approved.
	first int
}

const (
	defaultExpMonth = 12
	defaultExpYear  = 2034
)

// brandDefaults holds, per brand, the last four digits of Stripe's approving
// test card, which pm_sim_ ids without cardN share.
var brandDefaults = map[string]string{
	"visa":       "4242",
	"mastercard": "4444",
	"amex":       "8431",
	"discover":   "1117",
}

// threeDSCard is the card pm_sim_requires_action ids of brand use without cardN.
func threeDSCard(brand string) card {
	if brand == "visa" {
		return newCard("visa", "3184", "credit")
	}
	c := newCard(brand, brandDefaults[brand], "credit")
	c.identity = brand + ":sim-3ds"
	return c
}

func newCard(brand, last4, funding string) card {
	return card{
		brand:    brand,
		last4:    last4,
		funding:  funding,
		country:  "US",
		expMonth: defaultExpMonth,
		expYear:  defaultExpYear,
		identity: brand + ":" + last4,
	}
}

// stripeTestMethods are Stripe's own test payment method ids.
var stripeTestMethods = buildStripeTestMethods()

func buildStripeTestMethods() map[string]testMethod {
	m := map[string]testMethod{}
	add := func(id string, c card, kind outcomeKind, declineCode string) {
		t := testMethod{id: id, card: c, kind: kind}
		if declineCode != "" {
			t.decline = newDecline(declineCode)
		}
		m[id] = t
	}
	for id, c := range map[string]card{
		"pm_card_visa":                       newCard("visa", "4242", "credit"),
		"pm_card_visa_debit":                 newCard("visa", "5556", "debit"),
		"pm_card_mastercard":                 newCard("mastercard", "4444", "credit"),
		"pm_card_mastercard_debit":           newCard("mastercard", "8210", "debit"),
		"pm_card_mastercard_prepaid":         newCard("mastercard", "5100", "prepaid"),
		"pm_card_amex":                       newCard("amex", "8431", "credit"),
		"pm_card_discover":                   newCard("discover", "1117", "credit"),
		"pm_card_diners":                     newCard("diners", "0004", "credit"),
		"pm_card_jcb":                        newCard("jcb", "0505", "credit"),
		"pm_card_unionpay":                   newCard("unionpay", "0005", "credit"),
		"pm_card_us":                         newCard("visa", "4242", "credit"),
		"pm_card_bypassPending":              newCard("visa", "0077", "credit"),
		"pm_card_bypassPendingInternational": newCard("visa", "0085", "credit"),
	} {
		add(id, c, approve, "")
	}
	// Declines: both pm_card_chargeDeclinedX and pm_card_visa_chargeDeclinedX.
	for suffix, d := range map[string]struct{ last4, code string }{
		"":                      {"0002", "generic_decline"},
		"InsufficientFunds":     {"9995", "insufficient_funds"},
		"LostCard":              {"9987", "lost_card"},
		"StolenCard":            {"9979", "stolen_card"},
		"ExpiredCard":           {"0069", "expired_card"},
		"IncorrectCvc":          {"0127", "incorrect_cvc"},
		"ProcessingError":       {"0119", "processing_error"},
		"VelocityLimitExceeded": {"6975", "card_velocity_exceeded"},
		"Fraudulent":            {"0019", "fraudulent"},
	} {
		c := newCard("visa", d.last4, "credit")
		add("pm_card_chargeDeclined"+suffix, c, declined, d.code)
		add("pm_card_visa_chargeDeclined"+suffix, c, declined, d.code)
	}
	add("pm_card_radarBlock", newCard("visa", "0019", "credit"), declined, "fraudulent")
	add("pm_card_chargeCustomerFail", newCard("visa", "0341", "credit"), declined, "generic_decline")
	add("pm_card_threeDSecure2Required", newCard("visa", "3220", "credit"), authenticate, "")
	add("pm_card_threeDSecureRequired", newCard("visa", "3063", "credit"), authenticate, "")
	add("pm_card_authenticationRequired", newCard("visa", "3184", "credit"), authenticate, "")
	add("pm_card_authenticationRequiredChargeDeclinedInsufficientFunds",
		newCard("visa", "3178", "credit"), authenticate, "")
	t := testMethod{id: "pm_card_authenticationRequiredOnSetup", card: newCard("visa", "3155", "credit"),
		kind: authenticate, offSessionApproves: true}
	m[t.id] = t
	return m
}

// lookupMethod resolves a payment method id: one of Stripe's test ids or a
// simulator id (pm_sim_...). ok is false for anything else.
func lookupMethod(id string) (testMethod, bool) {
	if t, ok := stripeTestMethods[id]; ok {
		return t, true
	}
	if strings.HasPrefix(id, simMethodPrefix) {
		t, err := parseSimMethod(id)
		return t, err == nil
	}
	return testMethod{}, false
}

const simMethodPrefix = "pm_sim_"

var errSimMethod = errors.New("not a simulator payment method id")

// parseSimMethod parses the simulator's payment method ids:
//
//	pm_sim_<outcome>[_<modifier>]...
//
// where outcome is approve, requires_action, processing,
// processing_decline_<code> or decline_<code>, and the modifiers are a brand
// (visa, mc, mastercard, amex, discover) optionally followed by a two
// character network decline code, macNN, cardN, expMMYY, firstN and, last,
// advice_<advice_code>. See the package documentation.
func parseSimMethod(id string) (testMethod, error) {
	if len(id) > 255 || !strings.HasPrefix(id, simMethodPrefix) {
		return testMethod{}, errSimMethod
	}
	toks := strings.Split(id[len(simMethodPrefix):], "_")
	t := testMethod{id: id}
	i := 0
	next := func() string {
		if i < len(toks) {
			return toks[i]
		}
		return ""
	}
	needCode := false
	switch next() {
	case "approve":
		t.kind = approve
		i++
	case "decline":
		t.kind = declined
		i++
		needCode = true
	case "processing":
		t.kind = processing
		i++
		if next() == "decline" {
			t.settleDecline = true
			i++
			needCode = true
		}
	case "requires":
		i++
		if next() != "action" {
			return testMethod{}, errSimMethod
		}
		t.kind = authenticate
		i++
	default:
		return testMethod{}, errSimMethod
	}
	if needCode {
		j := i
		for j < len(toks) && !isSimModifier(toks[j]) {
			if !isCodeToken(toks[j]) {
				return testMethod{}, errSimMethod
			}
			j++
		}
		if j == i {
			return testMethod{}, errSimMethod
		}
		t.decline = newDecline(strings.Join(toks[i:j], "_"))
		i = j
	}

	brand, variant := "", -1
	expMonth, expYear := 0, 0
	seen := map[string]bool{}
	once := func(what string) error {
		if seen[what] {
			return errSimMethod
		}
		seen[what] = true
		return nil
	}
	for i < len(toks) {
		tok := toks[i]
		i++
		switch {
		case simBrands[tok] != "":
			if err := once("brand"); err != nil {
				return testMethod{}, err
			}
			brand = simBrands[tok]
			if nd := next(); isNetworkCode(nd) && !isSimModifier(nd) {
				t.decline.networkDeclineCode = strings.ToUpper(nd)
				i++
			}
		case isDigitsAfter(tok, "mac", 2, 2):
			if err := once("mac"); err != nil {
				return testMethod{}, err
			}
			t.decline.networkAdviceCode = tok[3:]
		case isDigitsAfter(tok, "card", 1, 4):
			if err := once("card"); err != nil {
				return testMethod{}, err
			}
			variant, _ = strconv.Atoi(tok[4:])
		case isDigitsAfter(tok, "exp", 4, 4):
			if err := once("exp"); err != nil {
				return testMethod{}, err
			}
			expMonth, _ = strconv.Atoi(tok[3:5])
			yy, _ := strconv.Atoi(tok[5:7])
			expYear = 2000 + yy
			if expMonth < 1 || expMonth > 12 {
				return testMethod{}, errSimMethod
			}
		case isDigitsAfter(tok, "first", 1, 4):
			if err := once("first"); err != nil {
				return testMethod{}, err
			}
			t.first, _ = strconv.Atoi(tok[5:])
			if t.first < 1 {
				return testMethod{}, errSimMethod
			}
		case tok == "advice":
			advice := strings.Join(toks[i:], "_")
			if advice == "" {
				return testMethod{}, errSimMethod
			}
			for _, a := range toks[i:] {
				if !isCodeToken(a) {
					return testMethod{}, errSimMethod
				}
			}
			t.decline.adviceCode = advice
			i = len(toks)
		default:
			return testMethod{}, errSimMethod
		}
	}
	hasDeclineFields := t.decline.networkDeclineCode != "" || t.decline.networkAdviceCode != "" ||
		t.decline.adviceCode != ""
	if hasDeclineFields && t.decline.code == "" {
		return testMethod{}, errSimMethod // network codes only go with a decline
	}
	if t.decline.networkAdviceCode != "" {
		if brand != "" && brand != "mastercard" {
			return testMethod{}, errSimMethod // advice codes are Mastercard's
		}
		brand = "mastercard"
	}
	if brand == "" {
		brand = "visa"
	}
	c := newCard(brand, brandDefaults[brand], "credit")
	if t.kind == authenticate {
		// A card that asks for 3-D Secure is another card than the brand's approving
		// one: on Visa, Stripe's 4000 0027 6000 3184 (pm_card_authenticationRequired).
		c = threeDSCard(brand)
	}
	if variant >= 0 {
		c.last4 = fmt.Sprintf("%04d", variant)
		c.identity = fmt.Sprintf("%s:sim-card-%d", brand, variant)
	}
	if expMonth != 0 {
		c.expMonth, c.expYear = expMonth, expYear
	}
	t.card = c
	return t, nil
}

var simBrands = map[string]string{
	"visa":       "visa",
	"mc":         "mastercard",
	"mastercard": "mastercard",
	"amex":       "amex",
	"discover":   "discover",
}

// isSimModifier reports whether tok starts a modifier rather than continuing
// a decline code.
func isSimModifier(tok string) bool {
	return simBrands[tok] != "" || tok == "advice" ||
		isDigitsAfter(tok, "mac", 2, 2) || isDigitsAfter(tok, "card", 1, 4) ||
		isDigitsAfter(tok, "exp", 4, 4) || isDigitsAfter(tok, "first", 1, 4)
}

// isDigitsAfter reports whether tok is prefix followed by lo to hi digits.
func isDigitsAfter(tok, prefix string, lo, hi int) bool {
	if !strings.HasPrefix(tok, prefix) {
		return false
	}
	d := tok[len(prefix):]
	if len(d) < lo || len(d) > hi {
		return false
	}
	for _, c := range d {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// isNetworkCode reports whether tok looks like a network decline code: two
// letters or digits ("05", "51", "N7", "R0", "1A").
func isNetworkCode(tok string) bool {
	if len(tok) != 2 {
		return false
	}
	for _, c := range tok {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// isCodeToken reports whether tok can be part of a decline or advice code.
func isCodeToken(tok string) bool {
	if tok == "" {
		return false
	}
	for _, c := range tok {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}
