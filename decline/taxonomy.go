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
	// knows, it is that code's category; otherwise it follows the class.
	Category Category `json:"category"`
	// Network is the card network, never empty.
	Network Network `json:"network"`
	// Code is the code that decided the class, as normalised: a network
	// code in upper case, a Stripe code in lower case, a MAC as two digits.
	// When nothing known decided, it is the most specific code present.
	Code string `json:"code"`
	// Source is the evidence field Code came from.
	Source Source `json:"source"`
	// MAC is the Mastercard Merchant Advice Code, when there was one.
	MAC MAC `json:"mac,omitempty"`
	// CapReached reports Stripe's own refusal
	// previously_declined_do_not_retry: Stripe blocked the attempt because
	// the card had been declined too often. The caller refuses further
	// attempts with network_cap_reached.
	CapReached bool `json:"cap_reached,omitempty"`
	// Blocked reports that the processor refused the attempt before it
	// reached the card network (outcome.network_status
	// "not_sent_to_network"). Record such an attempt as [Blocked], not
	// [Declined].
	Blocked bool `json:"blocked,omitempty"`
}

// MACDelay returns the delay c's Merchant Advice Code asks for, or 0.
func (c Classification) MACDelay() time.Duration { return MACDelay(c.MAC) }

// Stripe's own values this package reads.
const (
	previouslyDeclined = "previously_declined_do_not_retry"
	notSentToNetwork   = "not_sent_to_network"
	adviceTryLater     = "try_again_later"
)

// networkCodes are the network response codes of the decline table. The
// category of each is Visa's; the same ISO 8583 codes are read for
// Mastercard, Discover and unknown networks. Codes not listed here carry no
// signal: they fall through to Stripe's codes, and to [Generic] (Visa
// category 4) when nothing else is known.
var networkCodes = map[string]Class{
	// Visa category 1: the issuer will never approve.
	"04": Never, // pick up card
	"07": Never, // pick up card, special conditions
	"12": Never, // invalid transaction
	"14": Never, // invalid account number
	"15": Never, // no such issuer
	"41": Never, // lost card
	"43": Never, // stolen card
	"46": Never, // closed account
	"57": Never, // transaction not permitted to cardholder
	"R0": Never, // stop payment order
	"R1": Never, // revocation of authorization order
	"R3": Never, // revocation of all authorization orders
	// Visa category 3: the issuer cannot approve with these details.
	"54": FixData, // expired card
	"55": FixData, // incorrect PIN
	"82": FixData, // negative CAM, dCVV, iCVV or CVV result
	"N7": FixData, // CVV2 failure
	// Visa category 3 too, but the card data are right: the cardholder must
	// authenticate (3-D Secure).
	"1A": Authenticate, // additional customer authentication required
	// Visa category 2: the issuer cannot approve at this time.
	"51": Funds,           // insufficient funds
	"61": Funds,           // exceeds withdrawal amount limit
	"65": Funds,           // exceeds withdrawal frequency limit
	"19": IssuerTransient, // re-enter transaction
	"91": IssuerTransient, // issuer or switch inoperative
	"96": IssuerTransient, // system malfunction
	// Visa category 4: generic response codes.
	"05": Generic, // do not honor
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

// declineCodes are Stripe's card decline codes. The Visa response code a
// Stripe code usually stands for is noted where there is one; on a Visa card
// without a network code, the category follows the class, which agrees with
// those codes' Visa categories.
var declineCodes = map[string]Class{
	// The issuer will never approve this card for this merchant.
	"do_not_try_again":                 Never,
	"lost_card":                        Never, // Visa 41
	"stolen_card":                      Never, // Visa 43
	"pickup_card":                      Never, // Visa 04, 07
	"invalid_account":                  Never, // Visa 14, 46
	"revocation_of_authorization":      Never, // Visa R1
	"revocation_of_all_authorizations": Never, // Visa R3
	"stop_payment_order":               Never, // Visa R0
	// Stripe: the card can't be used for this payment, possibly reported
	// lost or stolen; only the issuer can lift it.
	"restricted_card": Never,
	// The transaction is not permitted to this card (Visa 57, category 1):
	// the same request cannot succeed later, and asking again is what the
	// networks fine.
	"transaction_not_allowed": Never, // Visa 57
	"not_permitted":           Never, // Visa 57
	"card_not_supported":      Never,
	"currency_not_supported":  Never,
	// Suspected fraud, the merchant's own block list and a test card used
	// in live mode: retrying is what card testing looks like.
	"fraudulent":         Never,
	"merchant_blacklist": Never,
	"testmode_decline":   Never,

	// The details are wrong or out of date.
	"expired_card":                   FixData, // Visa 54
	"incorrect_cvc":                  FixData, // Visa N7
	"invalid_cvc":                    FixData, // Visa N7
	"incorrect_number":               FixData,
	"invalid_number":                 FixData,
	"invalid_expiry_month":           FixData,
	"invalid_expiry_year":            FixData,
	"incorrect_zip":                  FixData,
	"incorrect_pin":                  FixData, // Visa 55
	"invalid_pin":                    FixData, // Visa 55
	"offline_pin_required":           FixData,
	"online_or_offline_pin_required": FixData,
	// Stripe's counterpart of Mastercard advice 01.
	"new_account_information_available": FixData,

	// The issuer asks for the cardholder's authentication (3-D Secure); on
	// Mastercard in Europe the network code is often 65, which this table
	// reads as funds: Stripe's code decides.
	"authentication_required": Authenticate, // Visa 1A

	// Not enough money or credit now.
	"insufficient_funds":              Funds, // Visa 51
	"card_velocity_exceeded":          Funds, // Visa 61, 65
	"withdrawal_count_limit_exceeded": Funds, // Visa 65

	// The issuer could not answer.
	"issuer_not_available": IssuerTransient, // Visa 91
	"processing_error":     IssuerTransient, // Visa 96
	"reenter_transaction":  IssuerTransient, // Visa 19
	"try_again_later":      IssuerTransient,
	"approve_with_id":      IssuerTransient,

	// No usable reason.
	"generic_decline":       Generic,
	"do_not_honor":          Generic, // Visa 05
	"call_issuer":           Generic,
	"no_action_taken":       Generic,
	"security_violation":    Generic,
	"service_not_allowed":   Generic,
	"invalid_amount":        Generic,
	"duplicate_transaction": Generic,
	"pin_try_exceeded":      Generic,
}

// signal is one piece of evidence that names a class.
type signal struct {
	class  Class
	code   string
	source Source
}

// Classify turns the evidence of one decline into its class, Visa category
// and network, naming the code and the field that decided.
//
// Evidence is read from the most specific field to the least: the Mastercard
// Merchant Advice Code (Mastercard or unknown network only, since other
// networks use the field for other advice), the network's response code
// (every network but Amex, whose codes are not ISO 8583), Stripe's
// advice_code, then Stripe's decline_code. A code this package does not know
// carries no signal. Of the fields that do, a blocking class wins from any
// field ([Never] first, then [FixData]), then [Authenticate], which no
// schedule can clear; otherwise the most specific field decides, with one
// refinement: Stripe's advice try_again_later says when, not why, so a
// [Funds] decline_code behind it keeps the funds schedule.
// When no field names a class, the decline is [Generic].
//
// Stripe's own refusal previously_declined_do_not_retry (in outcome.reason,
// or in decline_code) sets CapReached; network_status "not_sent_to_network"
// sets Blocked.
func Classify(e Evidence) Classification {
	net := e.Network.known()
	netCode := normalizeNetworkCode(e.NetworkDeclineCode)
	advice := normalizeStripeCode(e.AdviceCode)
	dcode := normalizeStripeCode(e.DeclineCode)
	mac, macErr := ParseMAC(e.NetworkAdviceCode)
	if macErr != nil || (net != Mastercard && net != UnknownNetwork) {
		mac = MACNone
	}

	var sigs []signal
	if c, ok := macClasses[mac]; ok {
		sigs = append(sigs, signal{c, mac.String(), SourceNetworkAdviceCode})
	}
	netClass, netKnown := networkCodes[netCode]
	if net == Amex {
		netKnown = false
	}
	if netKnown {
		sigs = append(sigs, signal{netClass, netCode, SourceNetworkDeclineCode})
	}
	if c, ok := adviceCodes[advice]; ok {
		sigs = append(sigs, signal{c, advice, SourceAdviceCode})
	}
	if c, ok := declineCodes[dcode]; ok {
		sigs = append(sigs, signal{c, dcode, SourceDeclineCode})
	}

	out := Classification{
		Network:    net,
		MAC:        mac,
		CapReached: normalizeStripeCode(e.OutcomeReason) == previouslyDeclined || dcode == previouslyDeclined,
		Blocked:    normalizeStripeCode(e.NetworkStatus) == notSentToNetwork,
	}
	if out.CapReached {
		out.Blocked = true
	}

	decided, ok := decide(sigs)
	if !ok {
		decided = signal{class: Generic}
		switch {
		case netCode != "":
			decided.code, decided.source = netCode, SourceNetworkDeclineCode
		case advice != "":
			decided.code, decided.source = advice, SourceAdviceCode
		case dcode != "":
			decided.code, decided.source = dcode, SourceDeclineCode
		case out.CapReached:
			decided.code, decided.source = previouslyDeclined, SourceOutcomeReason
		}
	}
	out.Class, out.Code, out.Source = decided.class, decided.code, decided.source

	if net == Visa {
		out.Category = out.Class.VisaCategory()
		if netKnown {
			out.Category = netClass.VisaCategory()
		}
	}
	return out
}

// decide picks the deciding signal from sigs, ordered most specific first.
func decide(sigs []signal) (signal, bool) {
	if len(sigs) == 0 {
		return signal{}, false
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
			if s.source == SourceDeclineCode && s.class == Funds {
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
