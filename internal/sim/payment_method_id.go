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
// advice_<advice_code>. See docs/simulators.md.
func parseSimMethod(id string) (testMethod, error) {
	if len(id) > 255 || !strings.HasPrefix(id, simMethodPrefix) {
		return testMethod{}, errSimMethod
	}
	p := &methodParser{toks: strings.Split(id[len(simMethodPrefix):], "_"), t: testMethod{id: id}, variant: -1,
		seen: map[string]bool{}}
	needCode, err := p.outcome()
	if err != nil {
		return testMethod{}, err
	}
	if needCode {
		if err := p.code(); err != nil {
			return testMethod{}, err
		}
	}
	for p.i < len(p.toks) {
		tok := p.toks[p.i]
		p.i++
		if err := p.modifier(tok); err != nil {
			return testMethod{}, err
		}
	}
	return p.method()
}

// methodParser reads a simulator payment method id's tokens (parseSimMethod).
type methodParser struct {
	toks []string
	i    int // the next token
	t    testMethod
	// brand, variant (-1: none) and the expiry (zero: the brand's) are the card's.
	brand             string
	variant           int
	expMonth, expYear int
	seen              map[string]bool // the modifiers read
}

// peek returns the next token, "" at the end.
func (p *methodParser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return ""
}

// outcome reads the outcome; needCode says a decline code follows.
func (p *methodParser) outcome() (needCode bool, err error) {
	switch p.peek() {
	case "approve":
		p.t.kind = approve
	case "decline":
		p.t.kind, needCode = declined, true
	case "processing":
		p.t.kind = processing
		if p.i++; p.peek() == "decline" {
			p.t.settleDecline, needCode = true, true
			p.i++
		}
		return needCode, nil
	case "requires":
		if p.i++; p.peek() != "action" {
			return false, errSimMethod
		}
		p.t.kind = authenticate
	default:
		return false, errSimMethod
	}
	p.i++
	return needCode, nil
}

// code reads a decline code: the tokens up to the first modifier, at least one.
func (p *methodParser) code() error {
	j := p.i
	for j < len(p.toks) && !isSimModifier(p.toks[j]) {
		if !isCodeToken(p.toks[j]) {
			return errSimMethod
		}
		j++
	}
	if j == p.i {
		return errSimMethod
	}
	p.t.decline = newDecline(strings.Join(p.toks[p.i:j], "_"))
	p.i = j
	return nil
}

// once refuses a modifier given twice.
func (p *methodParser) once(what string) error {
	if p.seen[what] {
		return errSimMethod
	}
	p.seen[what] = true
	return nil
}

// modifier reads the modifier tok (and what follows it: a brand's network decline code, an
// advice's code, which ends the id).
func (p *methodParser) modifier(tok string) error {
	var what string
	switch {
	case simBrands[tok] != "":
		what = "brand"
		p.brand = simBrands[tok]
		if nd := p.peek(); isNetworkCode(nd) && !isSimModifier(nd) {
			p.t.decline.networkDeclineCode = strings.ToUpper(nd)
			p.i++
		}
	case isDigitsAfter(tok, "mac", 2, 2):
		what = "mac"
		p.t.decline.networkAdviceCode = tok[3:]
	case isDigitsAfter(tok, "card", 1, 4):
		what = "card"
		p.variant, _ = strconv.Atoi(tok[4:])
	case isDigitsAfter(tok, "exp", 4, 4):
		what = "exp"
		p.expMonth, _ = strconv.Atoi(tok[3:5])
		yy, _ := strconv.Atoi(tok[5:7])
		p.expYear = 2000 + yy
		if p.expMonth < 1 || p.expMonth > 12 {
			return errSimMethod
		}
	case isDigitsAfter(tok, "first", 1, 4):
		what = "first"
		if p.t.first, _ = strconv.Atoi(tok[5:]); p.t.first < 1 {
			return errSimMethod
		}
	case tok == "advice":
		return p.advice()
	default:
		return errSimMethod
	}
	return p.once(what)
}

// advice reads the advice code, the rest of the id.
func (p *methodParser) advice() error {
	rest := p.toks[p.i:]
	if len(rest) == 0 {
		return errSimMethod
	}
	for _, a := range rest {
		if !isCodeToken(a) {
			return errSimMethod
		}
	}
	p.t.decline.adviceCode = strings.Join(rest, "_")
	p.i = len(p.toks)
	return nil
}

// method is the payment method read, once the id is whole: network codes only go with a
// decline, and advice codes are Mastercard's.
func (p *methodParser) method() (testMethod, error) {
	t, brand := p.t, p.brand
	hasDeclineFields := t.decline.networkDeclineCode != "" || t.decline.networkAdviceCode != "" ||
		t.decline.adviceCode != ""
	if hasDeclineFields && t.decline.code == "" {
		return testMethod{}, errSimMethod
	}
	if t.decline.networkAdviceCode != "" {
		if brand != "" && brand != "mastercard" {
			return testMethod{}, errSimMethod
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
	if p.variant >= 0 {
		c.last4 = fmt.Sprintf("%04d", p.variant)
		c.identity = fmt.Sprintf("%s:sim-card-%d", brand, p.variant)
	}
	if p.expMonth != 0 {
		c.expMonth, c.expYear = p.expMonth, p.expYear
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
