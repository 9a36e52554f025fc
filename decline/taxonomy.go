package decline

import (
	"strings"
	"time"
)

// Evidence is what a decline tells about itself. Every field is optional;
// Stripe's names are given for each. stripe-go v76 lacks the newer fields
// (advice_code, network_advice_code, network_decline_code): the processor
// adapter reads them from the raw JSON when present.
type Evidence struct {
	// DeclineCode is Stripe's decline_code, such as "insufficient_funds".
	DeclineCode string
	// Code is Stripe's error code of the card_error, such as "card_declined",
	// "expired_card" or "card_decline_rate_limit_exceeded". Some card errors
	// carry a code and no decline_code.
	Code string
	// AdviceCode is Stripe's advice_code: "do_not_try_again",
	// "try_again_later" or "confirm_card_data".
	AdviceCode string
	// NetworkDeclineCode is the network's own response code as Stripe
	// passes it on in network_decline_code, such as "51" or "N7".
	NetworkDeclineCode string
	// NetworkAdviceCode is the network's advice as Stripe passes it on in
	// network_advice_code; for Mastercard it is the Merchant Advice Code.
	NetworkAdviceCode string
	// Network is the card network the authorization went over (see
	// [ParseNetwork]); the empty value is [UnknownNetwork].
	Network Network
	// NetworkStatus is Stripe's outcome.network_status;
	// "not_sent_to_network" means the processor refused on its own.
	NetworkStatus string
	// OutcomeReason is Stripe's outcome.reason, such as
	// "previously_declined_do_not_retry".
	OutcomeReason string
}

// Source names the evidence field that decided a [Classification]. Its
// string forms are stable and use Stripe's field names.
type Source string

// The evidence fields, from the most to the least specific.
const (
	// SourceNone: no evidence at all; the class is [Generic].
	SourceNone Source = ""
	// SourceNetworkAdviceCode: the Mastercard Merchant Advice Code.
	SourceNetworkAdviceCode Source = "network_advice_code"
	// SourceNetworkDeclineCode: the network's response code.
	SourceNetworkDeclineCode Source = "network_decline_code"
	// SourceAdviceCode: Stripe's advice_code.
	SourceAdviceCode Source = "advice_code"
	// SourceDeclineCode: Stripe's decline_code.
	SourceDeclineCode Source = "decline_code"
	// SourceCode: Stripe's error code.
	SourceCode Source = "code"
	// SourceOutcomeReason: Stripe's outcome.reason.
	SourceOutcomeReason Source = "outcome_reason"
)

// Classification is what [Classify] makes of a decline. Its JSON form holds
// the contract's decline fields (code, network, category, class) and the
// evidence behind them.
type Classification struct {
	// Class is the reattempt policy.
	Class Class `json:"class"`
	// Category is the Visa category, 1 to 4, for a Visa card; 0 otherwise.
	// When the network's response code is one of the codes this package
	// knows, it is that code's category; otherwise that of the Visa code the
	// deciding Stripe code stands for, and else the class's.
	Category Category `json:"category"`
	// Network is the card network, never empty.
	Network Network `json:"network"`
	// Code is the code that decided the class, as normalised: a network
	// code in upper case, a Stripe code in lower case, a MAC as two digits.
	// When nothing known decided, it is the most specific code present.
	Code string `json:"code"`
	// Source is the evidence field Code came from.
	Source Source `json:"source"`
	// Hold is what the decline forbids beyond its class, or how far the
	// class's block reaches (see [Hold]); record it with the attempt.
	Hold Hold `json:"hold,omitempty"`
	// MAC is the Mastercard Merchant Advice Code, when there was one.
	MAC MAC `json:"mac,omitempty"`
	// CapReached reports Stripe's own refusal
	// previously_declined_do_not_retry: Stripe blocked the attempt because
	// the card had been declined too often. The caller refuses further
	// attempts with network_cap_reached.
	CapReached bool `json:"cap_reached,omitempty"`
	// Blocked reports that the processor refused the attempt before it
	// reached the card network (outcome.network_status
	// "not_sent_to_network", or one of Stripe's own refusals:
	// previously_declined_do_not_retry, card_decline_rate_limit_exceeded).
	// Record such an attempt as [Blocked], not [Declined].
	Blocked bool `json:"blocked,omitempty"`
}

// MACDelay returns the delay c's Merchant Advice Code asks for, or 0.
func (c Classification) MACDelay() time.Duration { return MACDelay(c.MAC) }

// Stripe's own values this package reads.
const (
	previouslyDeclined = "previously_declined_do_not_retry"
	declineRateLimit   = "card_decline_rate_limit_exceeded"
	notSentToNetwork   = "not_sent_to_network"
	adviceTryLater     = "try_again_later"
)

// networkCode is what one network response code means: its Visa category, the class and
// hold paygate gives it, and how it is read.
type networkCode struct {
	class    Class
	category Category
	hold     Hold
	// visaOnly codes are Visa's own and read only on a Visa card.
	visaOnly bool
	// overrides: Visa says no other code can override this one, so it decides the class
	// whatever else the decline carries.
	overrides bool
}

// networkCodes are the network response codes of the decline table, with Visa's category
// for each as the acquirers publish Visa's excessive reattempt rules (Checkout.com "Visa
// response codes"; Worldpay "Raw response codes"; TabaPay "Network response codes" and
// "Visa response code updates"; Cielo's changelog of 2025). The same ISO 8583 codes are read
// for Mastercard, Discover and unknown networks, but for Visa's own codes. Codes not listed
// here carry no signal: they fall through to Stripe's codes, and to [Generic] (Visa
// category 4) when nothing else is known.
//
// A category-2 code gets a retryable class: Visa allows reattempts after it. Those that say
// the card cannot be used here for now, without a reason that a few hours would lift, get
// the generic schedule, the slowest; 75 (PIN tries exceeded) asks for another card, as
// Stripe's pin_try_exceeded does. Visa moved 03, 62, 78 and 93 from category 1 to 2 on 17
// April 2021 and added 5C and 9G on 11 April 2025; 83 is category 2 from 25 October 2026.
var networkCodes = map[string]networkCode{
	// Visa category 1: the issuer will never approve.
	"04": {class: Never, category: CategoryNeverApprove}, // pick up card
	"07": {class: Never, category: CategoryNeverApprove}, // pick up card, special conditions
	"12": {class: Never, category: CategoryNeverApprove}, // invalid transaction
	"14": {class: Never, category: CategoryNeverApprove}, // invalid account number: categories 1 and 3, 1 wins
	"15": {class: Never, category: CategoryNeverApprove}, // no such issuer
	"41": {class: Never, category: CategoryNeverApprove}, // lost card
	"43": {class: Never, category: CategoryNeverApprove}, // stolen card
	"46": {class: Never, category: CategoryNeverApprove}, // closed account, deactivated token
	"57": {class: Never, category: CategoryNeverApprove}, // transaction not permitted to cardholder
	"R0": {class: Never, category: CategoryNeverApprove}, // stop payment order
	"R1": {class: Never, category: CategoryNeverApprove}, // revocation of authorization order
	"R3": {class: Never, category: CategoryNeverApprove}, // revocation of all authorization orders
	// Visa category 3: the issuer cannot approve with these details.
	"54": {class: FixData, category: CategoryDataQuality, hold: HoldExpiry},        // expired card
	"55": {class: FixData, category: CategoryDataQuality, hold: HoldPaymentMethod}, // incorrect PIN
	"82": {class: FixData, category: CategoryDataQuality, hold: HoldPaymentMethod}, // negative CAM, dCVV, iCVV or CVV result
	"N7": {class: FixData, category: CategoryDataQuality, hold: HoldPaymentMethod}, // CVV2 failure
	// Visa category 3 too, but the card data are right: the cardholder must
	// authenticate (3-D Secure).
	"1A": {class: Authenticate, category: CategoryDataQuality}, // additional customer authentication required
	// Visa category 2: the issuer cannot approve at this time.
	"51": {class: Funds, category: CategoryCannotApproveNow},                   // insufficient funds
	"61": {class: Funds, category: CategoryCannotApproveNow},                   // exceeds withdrawal amount limit
	"65": {class: Funds, category: CategoryCannotApproveNow},                   // exceeds withdrawal frequency limit
	"19": {class: IssuerTransient, category: CategoryCannotApproveNow},         // re-enter transaction
	"91": {class: IssuerTransient, category: CategoryCannotApproveNow},         // issuer or switch inoperative
	"96": {class: IssuerTransient, category: CategoryCannotApproveNow},         // system malfunction
	"03": {class: Generic, category: CategoryCannotApproveNow},                 // invalid merchant (for this merchant or MCC)
	"59": {class: Generic, category: CategoryCannotApproveNow},                 // suspected fraud
	"62": {class: Generic, category: CategoryCannotApproveNow},                 // restricted card (in this region or country)
	"78": {class: Generic, category: CategoryCannotApproveNow},                 // blocked, first used (card not activated)
	"93": {class: Generic, category: CategoryCannotApproveNow},                 // transaction cannot be completed: violation of law
	"75": {class: FixData, category: CategoryCannotApproveNow, hold: HoldCard}, // allowable number of PIN tries exceeded
	"5C": {class: Generic, category: CategoryCannotApproveNow, visaOnly: true}, // transaction not supported, blocked by issuer
	"9G": {class: Generic, category: CategoryCannotApproveNow, visaOnly: true}, // blocked by cardholder, contact cardholder
	// Visa network fraud block: "no other codes can override this code".
	"83": {class: Generic, category: CategoryCannotApproveNow, visaOnly: true, overrides: true},
	// Visa category 4: generic response codes.
	"05": {class: Generic, category: CategoryGeneric}, // do not honor
}

// macClasses are the Merchant Advice Codes that decide a class. Other codes
// (04 token requirements, 22, 40, 41, 43 product information) carry no
// reattempt signal.
var macClasses = map[MAC]Class{
	MACNewAccountInfo:      FixData,
	MACTryLater:            Funds,
	MACDoNotTryAgain:       Never,
	MACPaymentCancellation: Never,
	MACRetryAfter1Hour:     Funds,
	MACRetryAfter24Hours:   Funds,
	MACRetryAfter2Days:     Funds,
	MACRetryAfter4Days:     Funds,
	MACRetryAfter6Days:     Funds,
	MACRetryAfter8Days:     Funds,
	MACRetryAfter10Days:    Funds,
}

// adviceCodes are Stripe's advice_code values.
var adviceCodes = map[string]Class{
	"do_not_try_again":  Never,
	adviceTryLater:      IssuerTransient, // see Classify for funds
	"confirm_card_data": FixData,
}

// stripeCode is what one Stripe code means: its class and hold, and the Visa response code
// it stands for, whose category a Visa decline without a network code gets.
type stripeCode struct {
	class Class
	hold  Hold
	visa  string
}

// declineCodes are Stripe's card decline codes (Stripe, "Decline codes"). The Visa response
// code a Stripe code usually stands for is noted where there is one: on a Visa card without
// a network code, the category is that code's, and else the class's.
var declineCodes = map[string]stripeCode{
	// The issuer will never approve this card for this merchant.
	"do_not_try_again":                 {class: Never},
	"lost_card":                        {class: Never, visa: "41"},
	"stolen_card":                      {class: Never, visa: "43"},
	"pickup_card":                      {class: Never, visa: "04"},
	"invalid_account":                  {class: Never, visa: "14"},
	"revocation_of_authorization":      {class: Never, visa: "R1"},
	"revocation_of_all_authorizations": {class: Never, visa: "R3"},
	"stop_payment_order":               {class: Never, visa: "R0"},
	// Stripe: the card can't be used for this payment, possibly reported lost or stolen;
	// only the issuer can lift it. Visa's 62 is category 2, which a Visa network code
	// records; the class stays never.
	"restricted_card": {class: Never, visa: "62"},
	// The transaction is not permitted to this card (Visa 57, category 1):
	// the same request cannot succeed later, and asking again is what the
	// networks fine.
	"transaction_not_allowed": {class: Never, visa: "57"},
	"not_permitted":           {class: Never, visa: "57"},
	// The card does not support this currency or this type of purchase: never again in
	// the same currency on this card, but other charges on it go on.
	"card_not_supported":     {class: Never, hold: HoldCurrency},
	"currency_not_supported": {class: Never, hold: HoldCurrency},
	// Suspected fraud, the merchant's own block list and a test card used
	// in live mode: retrying is what card testing looks like.
	"fraudulent":         {class: Never},
	"merchant_blacklist": {class: Never},
	"testmode_decline":   {class: Never},

	// The details are wrong or out of date. An expired card is cleared by a new expiry;
	// data the shopper typed are cleared by a new payment method (the data entered again).
	"expired_card":                   {class: FixData, hold: HoldExpiry, visa: "54"},
	"incorrect_cvc":                  {class: FixData, hold: HoldPaymentMethod, visa: "N7"},
	"invalid_cvc":                    {class: FixData, hold: HoldPaymentMethod, visa: "N7"},
	"incorrect_number":               {class: FixData, hold: HoldPaymentMethod},
	"invalid_number":                 {class: FixData, hold: HoldPaymentMethod},
	"invalid_expiry_month":           {class: FixData, hold: HoldPaymentMethod},
	"invalid_expiry_year":            {class: FixData, hold: HoldPaymentMethod},
	"incorrect_zip":                  {class: FixData, hold: HoldPaymentMethod},
	"incorrect_address":              {class: FixData, hold: HoldPaymentMethod},
	"incorrect_pin":                  {class: FixData, hold: HoldPaymentMethod, visa: "55"},
	"invalid_pin":                    {class: FixData, hold: HoldPaymentMethod, visa: "55"},
	"offline_pin_required":           {class: FixData, hold: HoldPaymentMethod},
	"online_or_offline_pin_required": {class: FixData, hold: HoldPaymentMethod},
	// Stripe's counterpart of Mastercard advice 01: new card data exist, a new expiry or
	// another card.
	"new_account_information_available": {class: FixData},
	// Stripe: "the customer must use another card or method of payment" (Visa 75,
	// category 2).
	"pin_try_exceeded": {class: FixData, hold: HoldCard, visa: "75"},

	// The issuer asks for the cardholder's authentication (3-D Secure, or a tap again on
	// a mobile device); on Mastercard in Europe the network code is often 65, which this
	// table reads as funds: Stripe's code decides.
	"authentication_required":               {class: Authenticate, visa: "1A"},
	"authentication_not_handled":            {class: Authenticate, visa: "1A"},
	"mobile_device_authentication_required": {class: Authenticate, visa: "1A"},

	// Not enough money or credit now.
	"insufficient_funds":              {class: Funds, visa: "51"},
	"card_velocity_exceeded":          {class: Funds, visa: "61"},
	"withdrawal_count_limit_exceeded": {class: Funds, visa: "65"},

	// The issuer could not answer.
	"issuer_not_available": {class: IssuerTransient, visa: "91"},
	"processing_error":     {class: IssuerTransient, visa: "96"},
	"reenter_transaction":  {class: IssuerTransient, visa: "19"},
	"try_again_later":      {class: IssuerTransient},
	"approve_with_id":      {class: IssuerTransient},

	// No usable reason.
	"generic_decline":     {class: Generic},
	"do_not_honor":        {class: Generic, visa: "05"},
	"call_issuer":         {class: Generic},
	"no_action_taken":     {class: Generic},
	"security_violation":  {class: Generic},
	"service_not_allowed": {class: Generic},
	"invalid_amount":      {class: Generic},
	// Stripe: an identical transaction was submitted very recently; "check to see if a
	// recent payment already exists". No reattempt of this charge: it goes to review.
	"duplicate_transaction": {class: Generic, hold: HoldNoReattempt},
}

// errorCodes are Stripe's error codes of a card_error that say more than card_declined
// (Stripe, "Error codes"): a card error may carry one without a decline_code.
var errorCodes = map[string]stripeCode{
	"expired_card":            {class: FixData, hold: HoldExpiry, visa: "54"},
	"incorrect_cvc":           {class: FixData, hold: HoldPaymentMethod, visa: "N7"},
	"invalid_cvc":             {class: FixData, hold: HoldPaymentMethod, visa: "N7"},
	"incorrect_number":        {class: FixData, hold: HoldPaymentMethod},
	"invalid_number":          {class: FixData, hold: HoldPaymentMethod},
	"invalid_expiry_month":    {class: FixData, hold: HoldPaymentMethod},
	"invalid_expiry_year":     {class: FixData, hold: HoldPaymentMethod},
	"incorrect_zip":           {class: FixData, hold: HoldPaymentMethod},
	"incorrect_address":       {class: FixData, hold: HoldPaymentMethod},
	"authentication_required": {class: Authenticate, visa: "1A"},
	"processing_error":        {class: IssuerTransient, visa: "96"},
	// Stripe's own refusal: "this card has been declined too many times. You can try to
	// charge this card again after 24 hours." Not an authorization.
	declineRateLimit: {class: Generic, hold: HoldRateLimit},
}

// signal is one piece of evidence that names a class.
type signal struct {
	class     Class
	category  Category // the Visa category the evidence implies; 0 when it implies none
	hold      Hold
	code      string
	source    Source
	overrides bool
}

// stripeSignal is the signal of a Stripe code.
func stripeSignal(sc stripeCode, code string, source Source) signal {
	s := signal{class: sc.class, category: sc.class.VisaCategory(), hold: sc.hold, code: code, source: source}
	if nc, ok := networkCodes[sc.visa]; ok {
		s.category = nc.category
	}
	return s
}

// Classify turns the evidence of one decline into its class, Visa category,
// network and hold, naming the code and the field that decided.
//
// Evidence is read from the most specific field to the least: the Mastercard
// Merchant Advice Code (Mastercard or unknown network only, since other
// networks use the field for other advice), the network's response code
// (every network but Amex, whose codes are not ISO 8583; Visa's own codes
// 5C, 9G and 83 on Visa only), Stripe's advice_code, Stripe's decline_code,
// then Stripe's error code. A code this package does not know carries no
// signal. A code the network says no other code can override (Visa's 83)
// decides. Otherwise, of the fields that do carry a signal, a blocking class
// wins from any field ([Never] first, then [FixData]), then [Authenticate],
// which no schedule can clear; otherwise the most specific field decides,
// with one refinement: Stripe's advice try_again_later says when, not why, so
// a [Funds] decline_code behind it keeps the funds schedule. When no field
// names a class, the decline is [Generic].
//
// The hold is the deciding code's; when it has none, the first hold that adds
// a restriction to any class ([HoldRateLimit], [HoldNoReattempt]) among the
// other codes. A hold that narrows a class's block (a currency, a payment
// method) comes from the deciding code only: a network code that says never
// blocks the card whatever Stripe's code adds.
//
// Stripe's own refusals previously_declined_do_not_retry (in outcome.reason,
// or in decline_code) and card_decline_rate_limit_exceeded (in the error
// code) set Blocked, the first also CapReached; so does network_status
// "not_sent_to_network".
func Classify(e Evidence) Classification {
	net := e.Network.known()
	netCode := normalizeNetworkCode(e.NetworkDeclineCode)
	advice := normalizeStripeCode(e.AdviceCode)
	dcode := normalizeStripeCode(e.DeclineCode)
	ecode := normalizeStripeCode(e.Code)
	mac, macErr := ParseMAC(e.NetworkAdviceCode)
	if macErr != nil || (net != Mastercard && net != UnknownNetwork) {
		mac = MACNone
	}

	var sigs []signal
	if c, ok := macClasses[mac]; ok {
		sigs = append(sigs, signal{class: c, category: c.VisaCategory(), code: mac.String(), source: SourceNetworkAdviceCode})
	}
	nc, netKnown := networkCodes[netCode]
	if net == Amex || nc.visaOnly && net != Visa {
		netKnown = false
	}
	if netKnown {
		sigs = append(sigs, signal{class: nc.class, category: nc.category, hold: nc.hold, code: netCode,
			source: SourceNetworkDeclineCode, overrides: nc.overrides})
	}
	if c, ok := adviceCodes[advice]; ok {
		sigs = append(sigs, signal{class: c, category: c.VisaCategory(), code: advice, source: SourceAdviceCode})
	}
	if sc, ok := declineCodes[dcode]; ok {
		sigs = append(sigs, stripeSignal(sc, dcode, SourceDeclineCode))
	}
	if sc, ok := errorCodes[ecode]; ok {
		sigs = append(sigs, stripeSignal(sc, ecode, SourceCode))
	}

	out := Classification{
		Network:    net,
		MAC:        mac,
		CapReached: normalizeStripeCode(e.OutcomeReason) == previouslyDeclined || dcode == previouslyDeclined,
		Blocked:    normalizeStripeCode(e.NetworkStatus) == notSentToNetwork || ecode == declineRateLimit,
	}
	if out.CapReached {
		out.Blocked = true
	}

	decided, ok := decide(sigs)
	if !ok {
		decided = signal{class: Generic, category: CategoryGeneric}
		switch {
		case netCode != "":
			decided.code, decided.source = netCode, SourceNetworkDeclineCode
		case advice != "":
			decided.code, decided.source = advice, SourceAdviceCode
		case dcode != "":
			decided.code, decided.source = dcode, SourceDeclineCode
		case ecode != "":
			decided.code, decided.source = ecode, SourceCode
		case out.CapReached:
			decided.code, decided.source = previouslyDeclined, SourceOutcomeReason
		}
	}
	out.Class, out.Code, out.Source = decided.class, decided.code, decided.source
	out.Hold = decidedHold(decided, sigs)

	if net == Visa {
		out.Category = decided.category
		if netKnown {
			out.Category = nc.category
		}
	}
	return out
}

// decidedHold returns the hold of a decline decided by decided among sigs: the deciding code's
// when it fits the class, else the first restriction any class takes from the other codes.
func decidedHold(decided signal, sigs []signal) Hold {
	if decided.hold.fits(decided.class) {
		return decided.hold
	}
	for _, s := range sigs {
		if s.hold.additive() {
			return s.hold
		}
	}
	return HoldNone
}

// decide picks the deciding signal from sigs, ordered most specific first.
func decide(sigs []signal) (signal, bool) {
	if len(sigs) == 0 {
		return signal{}, false
	}
	for _, s := range sigs {
		if s.overrides {
			return s, true
		}
	}
	for _, blocking := range []Class{Never, FixData, Authenticate} {
		for _, s := range sigs {
			if s.class == blocking {
				return s, true
			}
		}
	}
	first := sigs[0]
	if first.source == SourceAdviceCode && first.code == adviceTryLater {
		for _, s := range sigs[1:] {
			if (s.source == SourceDeclineCode || s.source == SourceCode) && s.class == Funds {
				return s, true
			}
		}
	}
	return first, true
}

// normalizeNetworkCode returns a network response code in its canonical
// form: surrounding spaces dropped, letters in upper case, and a lone digit
// padded to two ("5" is "05").
func normalizeNetworkCode(s string) string {
	t := strings.ToUpper(strings.TrimSpace(s))
	if len(t) == 1 && t[0] >= '0' && t[0] <= '9' {
		t = "0" + t
	}
	return t
}

// normalizeStripeCode returns a Stripe code with surrounding spaces dropped
// and letters in lower case.
func normalizeStripeCode(s string) string {
	return strings.ToLower(strings.TrimSpace(s))
}
