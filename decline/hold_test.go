package decline

import (
	"testing"
	"time"
)

// declined is the attempt a decline with evidence e adds to a card's history: sent at at, in
// chain ch_1, with payment method pm, expiry exp and currency cur.
func declined(e Evidence, at time.Time, pm string, exp Expiry, cur string) Attempt {
	cl := Classify(e)
	out := Declined
	if cl.Blocked {
		out = Blocked
	}
	return Attempt{Charge: "ch_1", Chain: "ch_1", At: at, Outcome: out, Class: cl.Class, Network: cl.Network,
		MAC: cl.MAC, CapReached: cl.CapReached, Hold: cl.Hold, PaymentMethod: pm, Expiry: exp, Currency: cur}
}

// The card data of these tests: one card (one fingerprint), its first payment method, the
// one the shopper enters again after a decline (same number, same expiry), and its renewal.
var (
	expOld  = Expiry{Year: 2027, Month: 3}
	expNew  = Expiry{Year: 2031, Month: 3}
	pmFirst = "pm_1First"
	pmAgain = "pm_2Again"
)

// TestCheckFixDataByPaymentMethod: after a decline for data the shopper typed, a new
// PaymentMethod with the same fingerprint and expiry is the data entered again: allowed.
// Only the same payment method (the same id) is refused; without both ids the expiry rule
// of any fix-data decline holds. Sources: Visa category 3, "revalidate the payment
// information before reattempting" (Worldpay, "Raw response codes"; Checkout.com); Stripe,
// "Decline codes": incorrect_cvc, incorrect_zip, incorrect_pin, incorrect_address, "try
// again using the correct ...".
func TestCheckFixDataByPaymentMethod(t *testing.T) {
	t.Parallel()
	at := t0.Add(time.Hour)
	tests := []struct {
		name    string
		e       Evidence
		pm      string // the declined attempt's payment method
		next    Next
		allowed bool
		rule    Rule
	}{
		{"incorrect_cvc, the same payment method", Evidence{DeclineCode: "incorrect_cvc", Network: Visa}, pmFirst,
			Next{At: at, Network: Visa, PaymentMethod: pmFirst, Expiry: expOld, Currency: "usd"}, false, RuleFixData},
		{"incorrect_cvc, the data entered again", Evidence{DeclineCode: "incorrect_cvc", Network: Visa}, pmFirst,
			Next{At: at, Network: Visa, PaymentMethod: pmAgain, Expiry: expOld, Currency: "usd"}, true, ""},
		{"incorrect_cvc as an error code, the data entered again", Evidence{Code: "incorrect_cvc", Network: Visa}, pmFirst,
			Next{At: at, Network: Visa, PaymentMethod: pmAgain, Expiry: expOld}, true, ""},
		{"Visa N7, the data entered again", Evidence{NetworkDeclineCode: "N7", Network: Visa}, pmFirst,
			Next{At: at, Network: Visa, PaymentMethod: pmAgain, Expiry: expOld}, true, ""},
		{"incorrect_zip, the data entered again", Evidence{DeclineCode: "incorrect_zip", Network: Visa}, pmFirst,
			Next{At: at, Network: Visa, PaymentMethod: pmAgain, Expiry: expOld}, true, ""},
		{"incorrect_pin, the data entered again", Evidence{DeclineCode: "incorrect_pin", Network: Visa}, pmFirst,
			Next{At: at, Network: Visa, PaymentMethod: pmAgain, Expiry: expOld}, true, ""},
		{"incorrect_address, the same payment method", Evidence{Code: "incorrect_address", Network: Visa}, pmFirst,
			Next{At: at, Network: Visa, PaymentMethod: pmFirst, Expiry: expOld}, false, RuleFixData},
		{"incorrect_address, the data entered again", Evidence{Code: "incorrect_address", Network: Visa}, pmFirst,
			Next{At: at, Network: Visa, PaymentMethod: pmAgain, Expiry: expOld}, true, ""},
		// The same payment method updated in place with a new expiry is still the data refused.
		{"incorrect_cvc, the same payment method with a new expiry", Evidence{DeclineCode: "incorrect_cvc", Network: Visa}, pmFirst,
			Next{At: at, Network: Visa, PaymentMethod: pmFirst, Expiry: expNew}, false, RuleFixData},
		// Zero values: an unknown payment method proves no new data; the expiry rule holds.
		{"next payment method unknown, same expiry", Evidence{DeclineCode: "incorrect_cvc", Network: Visa}, pmFirst,
			Next{At: at, Network: Visa, Expiry: expOld}, false, RuleFixData},
		{"next payment method unknown, new expiry", Evidence{DeclineCode: "incorrect_cvc", Network: Visa}, pmFirst,
			Next{At: at, Network: Visa, Expiry: expNew}, true, ""},
		{"declined payment method not recorded, same expiry", Evidence{DeclineCode: "incorrect_cvc", Network: Visa}, "",
			Next{At: at, Network: Visa, PaymentMethod: pmAgain, Expiry: expOld}, false, RuleFixData},
		// Stripe, "Decline codes": expired_card; Visa 54 (category 3). A new expiry clears it,
		// whatever payment method carries it; a new payment method with the old expiry does not.
		{"expired_card, a new payment method with the old expiry", Evidence{DeclineCode: "expired_card", Network: Visa}, pmFirst,
			Next{At: at, Network: Visa, PaymentMethod: pmAgain, Expiry: expOld}, false, RuleFixData},
		{"expired_card, the same payment method renewed", Evidence{DeclineCode: "expired_card", Network: Visa}, pmFirst,
			Next{At: at, Network: Visa, PaymentMethod: pmFirst, Expiry: expNew}, true, ""},
		{"expired_card as an error code, old expiry", Evidence{Code: "expired_card", Network: Visa}, pmFirst,
			Next{At: at, Network: Visa, PaymentMethod: pmAgain, Expiry: expOld}, false, RuleFixData},
		// Mastercard advice 01 and new_account_information_available: new card data exist,
		// which a new payment method with the same expiry does not prove.
		{"MAC 01, a new payment method with the old expiry", Evidence{NetworkAdviceCode: "01", Network: Mastercard}, pmFirst,
			Next{At: at, Network: Mastercard, PaymentMethod: pmAgain, Expiry: expOld}, false, RuleFixData},
		// Stripe, "Decline codes": pin_try_exceeded, "the customer must use another card".
		{"pin_try_exceeded, the data entered again", Evidence{DeclineCode: "pin_try_exceeded", Network: Visa}, pmFirst,
			Next{At: at, Network: Visa, PaymentMethod: pmAgain, Expiry: expOld}, false, RuleAnotherCard},
		{"pin_try_exceeded, a renewed card", Evidence{DeclineCode: "pin_try_exceeded", Network: Visa}, pmFirst,
			Next{At: at, Network: Visa, PaymentMethod: pmAgain, Expiry: expNew}, false, RuleAnotherCard},
		{"Visa 75, a renewed card", Evidence{NetworkDeclineCode: "75", Network: Visa}, pmFirst,
			Next{At: at, Network: Visa, PaymentMethod: pmAgain, Expiry: expNew}, false, RuleAnotherCard},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := History{declined(tt.e, t0, tt.pm, expOld, "usd")}
			for _, chain := range []string{"", "ch_1"} {
				next := tt.next
				next.Chain = chain
				v := Check(h, next, Caps{})
				reason := Reason("")
				if !tt.allowed {
					reason = ReasonFixDataFirst
				}
				if tt.allowed && chain == "ch_1" {
					continue // a reattempt of the chain waits for the schedule, if any
				}
				assertVerdict(t, v, tt.allowed, reason, time.Time{})
				if v.Rule != tt.rule {
					t.Errorf("rule: got %q, want %q", v.Rule, tt.rule)
				}
			}
		})
	}
}

// TestCheckFixDataClearedByApproval: an approval proves only its own data.
func TestCheckFixDataClearedByApproval(t *testing.T) {
	t.Parallel()
	cvc := declined(Evidence{DeclineCode: "incorrect_cvc", Network: Visa}, t0, pmFirst, expOld, "usd")
	pin := declined(Evidence{DeclineCode: "pin_try_exceeded", Network: Visa}, t0, pmFirst, expOld, "usd")
	approved := func(pm string) Attempt {
		return Attempt{At: t0.Add(time.Hour), Outcome: Approved, Network: Visa, PaymentMethod: pm, Expiry: expOld}
	}
	at := t0.Add(2 * time.Hour)
	tests := []struct {
		name    string
		h       History
		next    Next
		allowed bool
	}{
		{"approved with the refused payment method", History{cvc, approved(pmFirst)},
			Next{At: at, Network: Visa, PaymentMethod: pmFirst, Expiry: expOld}, true},
		{"approved with another payment method", History{cvc, approved(pmAgain)},
			Next{At: at, Network: Visa, PaymentMethod: pmFirst, Expiry: expOld}, false},
		{"approved with an unknown payment method of the same expiry", History{cvc, approved("")},
			Next{At: at, Network: Visa, PaymentMethod: pmFirst, Expiry: expOld}, true},
		// The card works again (its PIN was reset and an approval settled later).
		{"another card asked, then an approval on the card", History{pin, approved(pmAgain)},
			Next{At: at, Network: Visa, PaymentMethod: pmFirst, Expiry: expOld}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			reason := ReasonFixDataFirst
			if tt.allowed {
				reason = ""
			}
			assertVerdict(t, Check(tt.h, tt.next, Caps{}), tt.allowed, reason, time.Time{})
		})
	}
}

// TestCheckCurrencyHold: a card that does not support a currency (or a type of purchase) is
// never charged in that currency again at the processor account, but stays usable for
// others. Source: Stripe, "Decline codes": currency_not_supported, "the card doesn't
// support the specified currency"; card_not_supported, "the card doesn't support this type
// of purchase" (paygate reads the type of a purchase by its currency).
func TestCheckCurrencyHold(t *testing.T) {
	t.Parallel()
	at := t0.Add(time.Hour)
	for _, code := range []string{"currency_not_supported", "card_not_supported"} {
		tests := []struct {
			name    string
			cur     string // the declined attempt's currency
			next    string // the next attempt's
			allowed bool
		}{
			{"same currency", "usd", "usd", false},
			{"same currency, other case", "usd", " USD", false},
			{"another currency", "usd", "eur", true},
			// Zero values: an unknown currency may be the refused one.
			{"next currency unknown", "usd", "", false},
			{"declined currency not recorded", "", "eur", false},
		}
		for _, tt := range tests {
			t.Run(code+" "+tt.name, func(t *testing.T) {
				t.Parallel()
				h := History{declined(Evidence{DeclineCode: code, Network: Visa}, t0, pmFirst, expOld, tt.cur)}
				v := Check(h, Next{At: at, Network: Visa, PaymentMethod: pmAgain, Expiry: expOld, Currency: tt.next}, Caps{})
				if tt.allowed {
					assertVerdict(t, v, true, "", time.Time{})
					return
				}
				assertVerdict(t, v, false, ReasonNeverReattempt, time.Time{})
				if v.RemainingInWindow != 0 || v.Rule != RuleAfterNever {
					t.Errorf("got remaining %d rule %q, want 0 %q", v.RemainingInWindow, v.Rule, RuleAfterNever)
				}
			})
		}
	}
}

// TestCheckRateLimitHold: after Stripe's card_decline_rate_limit_exceeded, no attempt on the
// card at that processor account for 24 hours, whatever its network, payment method or
// chain. Source: Stripe, "Error codes": card_decline_rate_limit_exceeded, "you can try to
// charge this card again after 24 hours".
func TestCheckRateLimitHold(t *testing.T) {
	t.Parallel()
	for _, network := range []Network{Visa, Mastercard, Amex} {
		h := History{declined(Evidence{Code: "card_decline_rate_limit_exceeded", Network: network}, t0, pmFirst, expOld, "usd")}
		if h[0].Outcome != Blocked || h[0].Hold != HoldRateLimit {
			t.Fatalf("%s: attempt %+v, want blocked with hold %q", network, h[0], HoldRateLimit)
		}
		lifts := t0.Add(24 * time.Hour)
		for _, chain := range []string{"", "ch_1"} {
			next := Next{At: lifts.Add(-time.Nanosecond), Network: network, PaymentMethod: pmAgain, Expiry: expNew, Chain: chain}
			v := Check(h, next, Caps{})
			assertVerdict(t, v, false, ReasonNetworkCapReached, lifts)
			if v.Rule != RuleProcessorRateLimit {
				t.Errorf("%s chain %q: rule got %q, want %q", network, chain, v.Rule, RuleProcessorRateLimit)
			}
		}
		next := Next{At: lifts, Network: network, PaymentMethod: pmFirst, Expiry: expOld}
		assertVerdict(t, Check(h, next, Caps{}), true, "", time.Time{})
		// A blocked attempt is no authorization: it takes no slot of a network cap.
		if got := Check(h, next, Caps{}).Counters; got != (Counters{}) {
			t.Errorf("%s: counters got %+v, want none", network, got)
		}
	}
}

// TestCheckPossibleDuplicate: after duplicate_transaction the declined charge may be a
// second payment of its order: its chain is not reattempted, by hand or automatically, while
// a new charge on the card is a new order's. Source: Stripe, "Decline codes":
// duplicate_transaction, "check to see if a recent payment already exists".
func TestCheckPossibleDuplicate(t *testing.T) {
	t.Parallel()
	for _, e := range []Evidence{
		{DeclineCode: "duplicate_transaction", Network: Visa},
		{DeclineCode: "duplicate_transaction", NetworkDeclineCode: "05", Network: Visa},
	} {
		h := History{declined(e, t0, pmFirst, expOld, "usd")}
		late := t0.Add(20 * day) // after every slot of the generic schedule
		for _, at := range []time.Time{t0.Add(2 * day), late} {
			v := Check(h, Next{At: at, Network: Visa, PaymentMethod: pmFirst, Expiry: expOld, Currency: "usd", Chain: "ch_1"}, Caps{})
			assertVerdict(t, v, false, ReasonPossibleDuplicate, time.Time{})
			if v.Rule != RulePossibleDuplicate {
				t.Errorf("%+v: rule got %q, want %q", e, v.Rule, RulePossibleDuplicate)
			}
		}
		v := Check(h, Next{At: t0.Add(time.Minute), Network: Visa, PaymentMethod: pmFirst, Expiry: expOld, Currency: "usd"}, Caps{})
		assertVerdict(t, v, true, "", time.Time{})
		// Another chain of the card is not held.
		v = Check(h, Next{At: t0.Add(2 * day), Network: Visa, Chain: "ch_other"}, Caps{})
		assertVerdict(t, v, true, "", time.Time{})
	}
}

// TestCheckHoldOfAnotherClass: a hold that does not belong to the attempt's class narrows
// nothing (the class's own rule holds), and an unknown hold is none.
func TestCheckHoldOfAnotherClass(t *testing.T) {
	t.Parallel()
	at := t0.Add(time.Hour)
	next := Next{At: at, Network: Visa, PaymentMethod: pmAgain, Expiry: expOld, Currency: "eur"}
	tests := []struct {
		name   string
		a      Attempt
		reason Reason
	}{
		{"never with a payment-method hold blocks the card", Attempt{At: t0, Outcome: Declined, Class: Never,
			Hold: HoldPaymentMethod, PaymentMethod: pmFirst, Currency: "usd"}, ReasonNeverReattempt},
		{"fix data with a currency hold keeps the expiry rule", Attempt{At: t0, Outcome: Declined, Class: FixData,
			Hold: HoldCurrency, PaymentMethod: pmFirst, Expiry: expOld, Currency: "usd"}, ReasonFixDataFirst},
		{"an unknown hold is none", Attempt{At: t0, Outcome: Declined, Class: FixData,
			Hold: Hold("from_a_later_version"), PaymentMethod: pmFirst, Expiry: expOld}, ReasonFixDataFirst},
		{"a never decline with an unknown hold blocks the card", Attempt{At: t0, Outcome: Declined, Class: Never,
			Hold: Hold("from_a_later_version"), Currency: "usd"}, ReasonNeverReattempt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.a.Network = Visa
			assertVerdict(t, Check(History{tt.a}, next, Caps{}), false, tt.reason, time.Time{})
		})
	}
}

// TestAuditCurrencyHold: the audit recounts the currency hold on its own: an attempt in
// another currency after a decline that refused only its currency broke no rule; one in the
// same currency, or in an unknown one, is an attempt after a never-class decline.
func TestAuditCurrencyHold(t *testing.T) {
	t.Parallel()
	decline := declined(Evidence{DeclineCode: "currency_not_supported", Network: Visa}, t0, pmFirst, expOld, "usd")
	tests := []struct {
		cur  string
		want []Rule
	}{
		{"eur", nil},
		{"usd", []Rule{RuleAfterNever}},
		{"USD", []Rule{RuleAfterNever}},
		{"", []Rule{RuleAfterNever}},
	}
	for _, tt := range tests {
		next := Attempt{Charge: "ch_2", Chain: "ch_2", At: t0.Add(time.Hour), Outcome: Approved, Network: Visa, Currency: tt.cur}
		got := rules(Audit(History{decline, next}, Caps{}).Violations)
		if len(got) != len(tt.want) || len(got) > 0 && got[0] != tt.want[0] {
			t.Errorf("currency %q: got %v, want %v", tt.cur, got, tt.want)
		}
		// Check and Audit agree.
		v := Check(History{decline}, Next{At: next.At, Network: Visa, Currency: tt.cur}, Caps{})
		if v.Allowed != (len(tt.want) == 0) {
			t.Errorf("currency %q: Check allowed %v, Audit found %v", tt.cur, v.Allowed, got)
		}
	}
	// Whole-card never declines cover every currency.
	lost := declined(Evidence{DeclineCode: "lost_card", Network: Visa}, t0, pmFirst, expOld, "usd")
	next := Attempt{Charge: "ch_2", At: t0.Add(time.Hour), Outcome: Declined, Class: Generic, Network: Visa, Currency: "eur"}
	if got := rules(Audit(History{lost, next}, Caps{}).Violations); len(got) != 1 || got[0] != RuleAfterNever {
		t.Errorf("after lost_card in another currency: got %v, want [%s]", got, RuleAfterNever)
	}
}
