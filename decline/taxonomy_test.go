package decline

import (
	"slices"
	"testing"
	"time"
)

// TestClassifyNetworkCodes: every network response code of the table, with the Visa
// category the acquirers publish for it. Sources: Checkout.com, "Visa response codes"
// (categories 1 to 3 as of 2025, 5C and 9G included); Worldpay, "Raw response codes";
// MidMetrics on Visa's April 2021 changes (03, 62, 78, 93 from category 1 to 2; 14 both 1
// and 3, never reattempted); TabaPay, "Visa response code updates" (83 category 2 from 25
// October 2026, "no other codes can override this code"; 57 category 1); Cielo changelog
// "New retry codes for Visa: 5C and 9G" (category 2 from 11 April 2025).
func TestClassifyNetworkCodes(t *testing.T) {
	t.Parallel()

	tests := []networkCase{
		// Visa category 1 (Checkout.com, Worldpay); 14 is also category 3 (MidMetrics).
		{code: "04", class: Never, category: 1}, {code: "07", class: Never, category: 1},
		{code: "12", class: Never, category: 1}, {code: "14", class: Never, category: 1},
		{code: "15", class: Never, category: 1}, {code: "41", class: Never, category: 1},
		{code: "43", class: Never, category: 1}, {code: "46", class: Never, category: 1},
		{code: "57", class: Never, category: 1}, {code: "R0", class: Never, category: 1},
		{code: "R1", class: Never, category: 1}, {code: "R3", class: Never, category: 1},
		// Visa category 3 (Checkout.com, Worldpay).
		{code: "54", class: FixData, category: 3, hold: HoldExpiry},
		{code: "55", class: FixData, category: 3, hold: HoldPaymentMethod},
		{code: "82", class: FixData, category: 3, hold: HoldPaymentMethod},
		{code: "N7", class: FixData, category: 3, hold: HoldPaymentMethod},
		{code: "1A", class: Authenticate, category: 3},
		// Visa category 2 (Checkout.com, Worldpay).
		{code: "51", class: Funds, category: 2}, {code: "61", class: Funds, category: 2},
		{code: "65", class: Funds, category: 2},
		{code: "19", class: IssuerTransient, category: 2}, {code: "91", class: IssuerTransient, category: 2},
		{code: "96", class: IssuerTransient, category: 2},
		// Visa category 2 since 17 April 2021 (MidMetrics; Checkout.com).
		{code: "03", class: Generic, category: 2}, {code: "62", class: Generic, category: 2},
		{code: "78", class: Generic, category: 2}, {code: "93", class: Generic, category: 2},
		// Visa category 2 (Checkout.com; Forte): suspected fraud, PIN tries exceeded (another
		// card, as Stripe's pin_try_exceeded asks).
		{code: "59", class: Generic, category: 2},
		{code: "75", class: FixData, category: 2, hold: HoldCard},
		// Visa's own category-2 codes (Cielo, TabaPay: 11 April 2025; TabaPay: 83 from 25
		// October 2026).
		{code: "5C", class: Generic, category: 2, visaOnly: true},
		{code: "9G", class: Generic, category: 2, visaOnly: true},
		{code: "83", class: Generic, category: 2, visaOnly: true},
		// Visa category 4, and codes this package does not know (Visa: every other code).
		{code: "05", class: Generic, category: 4}, {code: "N0", class: Generic, category: 4},
		{code: "99", class: Generic, category: 4},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			t.Parallel()
			got := Classify(Evidence{NetworkDeclineCode: tt.code, Network: Visa})
			if got.Class != tt.class {
				t.Errorf("class: got %q, want %q", got.Class, tt.class)
			}
			if got.Category != tt.category {
				t.Errorf("category: got %d, want %d", got.Category, tt.category)
			}
			if got.Hold != tt.hold {
				t.Errorf("hold: got %q, want %q", got.Hold, tt.hold)
			}
			if got.Code != tt.code || got.Source != SourceNetworkDeclineCode {
				t.Errorf("decided by: got %q from %q, want %q from %q", got.Code, got.Source, tt.code, SourceNetworkDeclineCode)
			}
			if got.Network != Visa {
				t.Errorf("network: got %q, want %q", got.Network, Visa)
			}
			// The same code on Mastercard has the same class and no category; Visa's own
			// codes say nothing there.
			mc := Classify(Evidence{NetworkDeclineCode: tt.code, DeclineCode: "insufficient_funds", Network: Mastercard})
			wantMC := tt.class
			if _, known := networkCodes[tt.code]; tt.visaOnly || !known {
				wantMC = Funds // no signal: Stripe's insufficient_funds decides
			}
			if mc.Class != wantMC || mc.Category != CategoryNone {
				t.Errorf("on mastercard: got %q category %d, want %q category 0", mc.Class, mc.Category, wantMC)
			}
		})
	}
	for code := range networkCodes {
		if !slices.ContainsFunc(tests, func(tt networkCase) bool { return tt.code == code }) {
			t.Errorf("network code %q has no test case", code)
		}
	}
}

// networkCase is what a network response code must give on a Visa card.
type networkCase struct {
	code     string
	class    Class
	category Category
	hold     Hold
	visaOnly bool
}

func TestClassifyMAC(t *testing.T) {
	t.Parallel()

	tests := []struct {
		mac   string
		class Class
		delay time.Duration
	}{
		{"03", Never, 0},
		{"21", Never, 0},
		{"01", FixData, 0},
		{"02", Funds, 0},
		{"24", Funds, time.Hour},
		{"25", Funds, 24 * time.Hour},
		{"26", Funds, 2 * day},
		{"27", Funds, 4 * day},
		{"28", Funds, 6 * day},
		{"29", Funds, 8 * day},
		{"30", Funds, 10 * day},
	}
	for _, tt := range tests {
		t.Run(tt.mac, func(t *testing.T) {
			t.Parallel()
			got := Classify(Evidence{NetworkAdviceCode: tt.mac, DeclineCode: "generic_decline", Network: Mastercard})
			if got.Class != tt.class {
				t.Errorf("class: got %q, want %q", got.Class, tt.class)
			}
			if got.Source != SourceNetworkAdviceCode || got.Code != tt.mac {
				t.Errorf("decided by: got %q from %q, want %q from %q", got.Code, got.Source, tt.mac, SourceNetworkAdviceCode)
			}
			if got.MAC.String() != tt.mac {
				t.Errorf("mac: got %q, want %q", got.MAC, tt.mac)
			}
			if d := got.MACDelay(); d != tt.delay {
				t.Errorf("delay: got %v, want %v", d, tt.delay)
			}
			if got.Category != CategoryNone {
				t.Errorf("category: got %d, want 0", got.Category)
			}
		})
	}
}

func TestClassifyAdviceCodes(t *testing.T) {
	t.Parallel()

	tests := []struct {
		advice string
		class  Class
	}{
		{"do_not_try_again", Never},
		{"try_again_later", IssuerTransient},
		{"confirm_card_data", FixData},
	}
	for _, tt := range tests {
		t.Run(tt.advice, func(t *testing.T) {
			t.Parallel()
			got := Classify(Evidence{AdviceCode: tt.advice, DeclineCode: "generic_decline"})
			if got.Class != tt.class {
				t.Errorf("class: got %q, want %q", got.Class, tt.class)
			}
			if got.Source != SourceAdviceCode || got.Code != tt.advice {
				t.Errorf("decided by: got %q from %q, want %q from %q", got.Code, got.Source, tt.advice, SourceAdviceCode)
			}
		})
	}
}

// stripeCodeCase is what a Stripe code must give on a Visa card without a network code.
type stripeCodeCase struct {
	class    Class
	category Category
	hold     Hold
}

// stripeDeclineCodes is every Stripe decline code with the class, Visa category and hold it
// must get, written out rather than derived from the table under test. Source: Stripe,
// "Decline codes" (docs.stripe.com/declines/codes, card decline codes) and stripe-go v76's
// DeclineCode constants; the category is that of the Visa code the Stripe code stands for
// (Checkout.com, "Visa response codes"), else the class's.
var stripeDeclineCodes = map[string]stripeCodeCase{
	"do_not_try_again":                      {Never, 1, ""},
	"lost_card":                             {Never, 1, ""}, // Visa 41
	"stolen_card":                           {Never, 1, ""}, // Visa 43
	"pickup_card":                           {Never, 1, ""}, // Visa 04
	"invalid_account":                       {Never, 1, ""}, // Visa 14
	"revocation_of_authorization":           {Never, 1, ""}, // Visa R1
	"revocation_of_all_authorizations":      {Never, 1, ""}, // Visa R3
	"stop_payment_order":                    {Never, 1, ""}, // Visa R0
	"restricted_card":                       {Never, 2, ""}, // Visa 62, category 2 since April 2021
	"transaction_not_allowed":               {Never, 1, ""}, // Visa 57
	"not_permitted":                         {Never, 1, ""}, // Visa 57
	"card_not_supported":                    {Never, 1, HoldCurrency},
	"currency_not_supported":                {Never, 1, HoldCurrency},
	"fraudulent":                            {Never, 1, ""},
	"merchant_blacklist":                    {Never, 1, ""},
	"testmode_decline":                      {Never, 1, ""},
	"expired_card":                          {FixData, 3, HoldExpiry},        // Visa 54
	"incorrect_cvc":                         {FixData, 3, HoldPaymentMethod}, // Visa N7
	"invalid_cvc":                           {FixData, 3, HoldPaymentMethod}, // Visa N7
	"incorrect_number":                      {FixData, 3, HoldPaymentMethod},
	"invalid_number":                        {FixData, 3, HoldPaymentMethod},
	"invalid_expiry_month":                  {FixData, 3, HoldPaymentMethod},
	"invalid_expiry_year":                   {FixData, 3, HoldPaymentMethod},
	"incorrect_zip":                         {FixData, 3, HoldPaymentMethod},
	"incorrect_address":                     {FixData, 3, HoldPaymentMethod},
	"incorrect_pin":                         {FixData, 3, HoldPaymentMethod}, // Visa 55
	"invalid_pin":                           {FixData, 3, HoldPaymentMethod}, // Visa 55
	"offline_pin_required":                  {FixData, 3, HoldPaymentMethod},
	"online_or_offline_pin_required":        {FixData, 3, HoldPaymentMethod},
	"new_account_information_available":     {FixData, 3, ""},
	"pin_try_exceeded":                      {FixData, 2, HoldCard},   // Visa 75; "use another card"
	"authentication_required":               {Authenticate, 3, ""},    // Visa 1A
	"authentication_not_handled":            {Authenticate, 3, ""},    // "related to authentication_required"
	"mobile_device_authentication_required": {Authenticate, 3, ""},    // "retry by tapping your mobile device again"
	"insufficient_funds":                    {Funds, 2, ""},           // Visa 51
	"card_velocity_exceeded":                {Funds, 2, ""},           // Visa 61
	"withdrawal_count_limit_exceeded":       {Funds, 2, ""},           // Visa 65
	"issuer_not_available":                  {IssuerTransient, 2, ""}, // Visa 91
	"processing_error":                      {IssuerTransient, 2, ""}, // Visa 96
	"reenter_transaction":                   {IssuerTransient, 2, ""}, // Visa 19
	"try_again_later":                       {IssuerTransient, 2, ""},
	"approve_with_id":                       {IssuerTransient, 2, ""},
	"generic_decline":                       {Generic, 4, ""},
	"do_not_honor":                          {Generic, 4, ""}, // Visa 05
	"call_issuer":                           {Generic, 4, ""},
	"no_action_taken":                       {Generic, 4, ""},
	"security_violation":                    {Generic, 4, ""},
	"service_not_allowed":                   {Generic, 4, ""},
	"invalid_amount":                        {Generic, 4, ""},
	"duplicate_transaction":                 {Generic, 4, HoldNoReattempt}, // "check to see if a recent payment already exists"
	"a_code_stripe_adds_next_year":          {Generic, 4, ""},
}

func TestClassifyDeclineCodes(t *testing.T) {
	t.Parallel()

	for code, want := range stripeDeclineCodes {
		t.Run(code, func(t *testing.T) {
			t.Parallel()
			got := Classify(Evidence{DeclineCode: code, Network: Visa})
			if got.Class != want.class {
				t.Errorf("class: got %q, want %q", got.Class, want.class)
			}
			if got.Code != code || got.Source != SourceDeclineCode {
				t.Errorf("decided by: got %q from %q, want %q from %q", got.Code, got.Source, code, SourceDeclineCode)
			}
			if got.Category != want.category {
				t.Errorf("visa category: got %d, want %d", got.Category, want.category)
			}
			if got.Hold != want.hold {
				t.Errorf("hold: got %q, want %q", got.Hold, want.hold)
			}
			if other := Classify(Evidence{DeclineCode: code, Network: Discover}); other.Category != CategoryNone {
				t.Errorf("discover category: got %d, want 0", other.Category)
			}
		})
	}
	for code := range declineCodes {
		if _, ok := stripeDeclineCodes[code]; !ok {
			t.Errorf("decline code %q has no test case", code)
		}
	}
}

// TestClassifyErrorCodes: a card_error with Stripe's error code and no decline_code is
// classified by its code, not as generic. Source: Stripe, "Error codes"
// (docs.stripe.com/error-codes) and stripe-go v76's ErrorCode constants.
func TestClassifyErrorCodes(t *testing.T) {
	t.Parallel()

	tests := map[string]struct {
		stripeCodeCase
		blocked bool
	}{
		"expired_card":            {stripeCodeCase{FixData, 3, HoldExpiry}, false},
		"incorrect_cvc":           {stripeCodeCase{FixData, 3, HoldPaymentMethod}, false},
		"invalid_cvc":             {stripeCodeCase{FixData, 3, HoldPaymentMethod}, false},
		"incorrect_number":        {stripeCodeCase{FixData, 3, HoldPaymentMethod}, false},
		"invalid_number":          {stripeCodeCase{FixData, 3, HoldPaymentMethod}, false},
		"invalid_expiry_month":    {stripeCodeCase{FixData, 3, HoldPaymentMethod}, false},
		"invalid_expiry_year":     {stripeCodeCase{FixData, 3, HoldPaymentMethod}, false},
		"incorrect_zip":           {stripeCodeCase{FixData, 3, HoldPaymentMethod}, false},
		"incorrect_address":       {stripeCodeCase{FixData, 3, HoldPaymentMethod}, false},
		"authentication_required": {stripeCodeCase{Authenticate, 3, ""}, false},
		"processing_error":        {stripeCodeCase{IssuerTransient, 2, ""}, false},
		// "This card has been declined too many times. You can try to charge this card
		// again after 24 hours": Stripe's own refusal, not an authorization.
		"card_decline_rate_limit_exceeded": {stripeCodeCase{Generic, 4, HoldRateLimit}, true},
	}
	for code, want := range tests {
		t.Run(code, func(t *testing.T) {
			t.Parallel()
			got := Classify(Evidence{Code: code, Network: Visa})
			if got.Class != want.class || got.Category != want.category || got.Hold != want.hold {
				t.Errorf("got %q category %d hold %q, want %q category %d hold %q",
					got.Class, got.Category, got.Hold, want.class, want.category, want.hold)
			}
			if got.Code != code || got.Source != SourceCode {
				t.Errorf("decided by: got %q from %q, want %q from %q", got.Code, got.Source, code, SourceCode)
			}
			if got.Blocked != want.blocked || got.CapReached {
				t.Errorf("blocked %v cap reached %v, want %v false", got.Blocked, got.CapReached, want.blocked)
			}
		})
	}
	for code := range errorCodes {
		if _, ok := tests[code]; !ok {
			t.Errorf("error code %q has no test case", code)
		}
	}
	// card_declined says nothing more than the decline_code beside it.
	if got := Classify(Evidence{Code: "card_declined", DeclineCode: "insufficient_funds", Network: Visa}); got.Class != Funds || got.Source != SourceDeclineCode {
		t.Errorf("card_declined with insufficient_funds: got %q from %q, want funds from decline_code", got.Class, got.Source)
	}
	if got := Classify(Evidence{Code: "card_declined", Network: Visa}); got.Class != Generic || got.Code != "card_declined" || got.Source != SourceCode {
		t.Errorf("card_declined alone: got %q %q from %q, want generic card_declined from code", got.Class, got.Code, got.Source)
	}
}

func TestClassifyVisaCategoryOfStripeCodes(t *testing.T) {
	t.Parallel()

	tests := []struct {
		code string
		want Category
	}{
		{"insufficient_funds", 2},
		{"issuer_not_available", 2},
		{"lost_card", 1},
		{"restricted_card", 2},
		{"pin_try_exceeded", 2},
		{"expired_card", 3},
		{"incorrect_cvc", 3},
		{"authentication_required", 3},
		{"do_not_honor", 4},
		{"generic_decline", 4},
		{"never_heard_of_it", 4},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			t.Parallel()
			if got := Classify(Evidence{DeclineCode: tt.code, Network: Visa}).Category; got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}

func TestClassifyPrecedence(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name     string
		e        Evidence
		class    Class
		code     string
		source   Source
		category Category
		hold     Hold
	}{
		{
			name:  "stripe generic, MAC 03",
			e:     Evidence{DeclineCode: "generic_decline", NetworkAdviceCode: "03", Network: Mastercard},
			class: Never, code: "03", source: SourceNetworkAdviceCode,
		},
		{
			name:  "stripe generic, MAC 21",
			e:     Evidence{DeclineCode: "do_not_honor", NetworkDeclineCode: "05", NetworkAdviceCode: "21", Network: Mastercard},
			class: Never, code: "21", source: SourceNetworkAdviceCode,
		},
		{
			name:  "MAC 02 over network 91",
			e:     Evidence{NetworkDeclineCode: "91", NetworkAdviceCode: "02", Network: Mastercard},
			class: Funds, code: "02", source: SourceNetworkAdviceCode,
		},
		{
			name:  "network 91 over stripe generic",
			e:     Evidence{NetworkDeclineCode: "91", DeclineCode: "generic_decline", Network: Visa},
			class: IssuerTransient, code: "91", source: SourceNetworkDeclineCode, category: 2,
		},
		{
			name:  "network 05 over stripe insufficient_funds",
			e:     Evidence{NetworkDeclineCode: "05", DeclineCode: "insufficient_funds", Network: Visa},
			class: Generic, code: "05", source: SourceNetworkDeclineCode, category: 4,
		},
		{
			name:  "advice over decline code",
			e:     Evidence{AdviceCode: "confirm_card_data", DeclineCode: "do_not_honor", Network: Visa},
			class: FixData, code: "confirm_card_data", source: SourceAdviceCode, category: 3,
		},
		{
			name:  "advice do_not_try_again over network 51",
			e:     Evidence{NetworkDeclineCode: "51", AdviceCode: "do_not_try_again", DeclineCode: "insufficient_funds", Network: Visa},
			class: Never, code: "do_not_try_again", source: SourceAdviceCode, category: 2,
		},
		{
			name:  "stripe lost_card blocks over advice try_again_later",
			e:     Evidence{AdviceCode: "try_again_later", DeclineCode: "lost_card", Network: Visa},
			class: Never, code: "lost_card", source: SourceDeclineCode, category: 1,
		},
		{
			name:  "stripe expired_card blocks over MAC 24",
			e:     Evidence{NetworkAdviceCode: "24", DeclineCode: "expired_card", Network: Mastercard},
			class: FixData, code: "expired_card", source: SourceDeclineCode, hold: HoldExpiry,
		},
		{
			name:  "never beats fix data",
			e:     Evidence{NetworkDeclineCode: "54", DeclineCode: "stolen_card", Network: Visa},
			class: Never, code: "stolen_card", source: SourceDeclineCode, category: 3,
		},
		{
			name:  "try_again_later keeps the funds schedule",
			e:     Evidence{AdviceCode: "try_again_later", DeclineCode: "insufficient_funds", Network: Visa},
			class: Funds, code: "insufficient_funds", source: SourceDeclineCode, category: 2,
		},
		{
			name:  "try_again_later over do_not_honor",
			e:     Evidence{AdviceCode: "try_again_later", DeclineCode: "do_not_honor", Network: Visa},
			class: IssuerTransient, code: "try_again_later", source: SourceAdviceCode, category: 2,
		},
		{
			name:  "unknown network code falls through to stripe",
			e:     Evidence{NetworkDeclineCode: "N0", DeclineCode: "insufficient_funds", Network: Visa},
			class: Funds, code: "insufficient_funds", source: SourceDeclineCode, category: 2,
		},
		{
			name:  "nothing known: generic, most specific code",
			e:     Evidence{NetworkDeclineCode: "Q9", AdviceCode: "something_new", DeclineCode: "brand_new", Network: Visa},
			class: Generic, code: "Q9", source: SourceNetworkDeclineCode, category: 4,
		},
		{
			name:  "no evidence at all",
			e:     Evidence{},
			class: Generic, code: "", source: SourceNone,
		},
		{
			name:  "MAC ignored on visa",
			e:     Evidence{NetworkAdviceCode: "03", DeclineCode: "insufficient_funds", Network: Visa},
			class: Funds, code: "insufficient_funds", source: SourceDeclineCode, category: 2,
		},
		{
			name:  "MAC read on an unknown network",
			e:     Evidence{NetworkAdviceCode: "03", DeclineCode: "insufficient_funds"},
			class: Never, code: "03", source: SourceNetworkAdviceCode,
		},
		{
			name:  "garbage MAC ignored",
			e:     Evidence{NetworkAdviceCode: "x3", DeclineCode: "insufficient_funds", Network: Mastercard},
			class: Funds, code: "insufficient_funds", source: SourceDeclineCode,
		},
		{
			name:  "amex network codes are not ISO 8583",
			e:     Evidence{NetworkDeclineCode: "41", DeclineCode: "insufficient_funds", Network: Amex},
			class: Funds, code: "insufficient_funds", source: SourceDeclineCode,
		},
		{
			name:  "network code normalised",
			e:     Evidence{NetworkDeclineCode: " n7 ", Network: Visa},
			class: FixData, code: "N7", source: SourceNetworkDeclineCode, category: 3, hold: HoldPaymentMethod,
		},
		{
			name:  "one-digit network code padded",
			e:     Evidence{NetworkDeclineCode: "5", DeclineCode: "insufficient_funds", Network: Visa},
			class: Generic, code: "05", source: SourceNetworkDeclineCode, category: 4,
		},
		{
			name:  "stripe code normalised",
			e:     Evidence{DeclineCode: " Insufficient_Funds ", Network: Visa},
			class: Funds, code: "insufficient_funds", source: SourceDeclineCode, category: 2,
		},
		{
			name:  "category from a known network code, class from stripe",
			e:     Evidence{NetworkDeclineCode: "05", DeclineCode: "incorrect_cvc", Network: Visa},
			class: FixData, code: "incorrect_cvc", source: SourceDeclineCode, category: 4, hold: HoldPaymentMethod,
		},
		// Visa 62 is category 2 since April 2021 (MidMetrics; Checkout.com): Stripe's
		// restricted_card still blocks, the category is the network's.
		{
			name:  "62 with restricted_card: never, category 2",
			e:     Evidence{NetworkDeclineCode: "62", DeclineCode: "restricted_card", Network: Visa},
			class: Never, code: "restricted_card", source: SourceDeclineCode, category: 2,
		},
		{
			name:  "category 1 where the network says so",
			e:     Evidence{NetworkDeclineCode: "41", DeclineCode: "insufficient_funds", Network: Visa},
			class: Never, code: "41", source: SourceNetworkDeclineCode, category: 1,
		},
		{
			name:  "a category-1 Stripe code behind a category-2 network code",
			e:     Evidence{NetworkDeclineCode: "51", DeclineCode: "lost_card", Network: Visa},
			class: Never, code: "lost_card", source: SourceDeclineCode, category: 2,
		},
		// TabaPay, "Visa response code updates": 83, "no other codes can override this code".
		{
			name:  "83 overrides every other code",
			e:     Evidence{NetworkDeclineCode: "83", AdviceCode: "do_not_try_again", DeclineCode: "fraudulent", Network: Visa},
			class: Generic, code: "83", source: SourceNetworkDeclineCode, category: 2,
		},
		{
			name:  "83 is Visa's: nothing on mastercard",
			e:     Evidence{NetworkDeclineCode: "83", DeclineCode: "insufficient_funds", Network: Mastercard},
			class: Funds, code: "insufficient_funds", source: SourceDeclineCode,
		},
		{
			name:  "5C is Visa's: nothing on an unknown network",
			e:     Evidence{NetworkDeclineCode: "5c", DeclineCode: "insufficient_funds"},
			class: Funds, code: "insufficient_funds", source: SourceDeclineCode,
		},
		{
			name:  "a decline_code decides before the error code",
			e:     Evidence{Code: "expired_card", DeclineCode: "expired_card", Network: Visa},
			class: FixData, code: "expired_card", source: SourceDeclineCode, category: 3, hold: HoldExpiry,
		},
		{
			name:  "an error code behind a network code",
			e:     Evidence{Code: "incorrect_cvc", NetworkDeclineCode: "N7", Network: Visa},
			class: FixData, code: "N7", source: SourceNetworkDeclineCode, category: 3, hold: HoldPaymentMethod,
		},
		{
			name:  "advice over an error code",
			e:     Evidence{AdviceCode: "try_again_later", Code: "processing_error", Network: Visa},
			class: IssuerTransient, code: "try_again_later", source: SourceAdviceCode, category: 2,
		},
		// Holds: the one that stops a chain rides along whichever code decides; one that
		// narrows a block comes from the deciding code only.
		{
			name:  "duplicate_transaction behind network 05 keeps its hold",
			e:     Evidence{NetworkDeclineCode: "05", DeclineCode: "duplicate_transaction", Network: Visa},
			class: Generic, code: "05", source: SourceNetworkDeclineCode, category: 4, hold: HoldNoReattempt,
		},
		{
			name:  "network 57 with currency_not_supported blocks the whole card",
			e:     Evidence{NetworkDeclineCode: "57", DeclineCode: "currency_not_supported", Network: Visa},
			class: Never, code: "57", source: SourceNetworkDeclineCode, category: 1,
		},
		{
			name:  "MAC 03 with currency_not_supported blocks the whole card",
			e:     Evidence{NetworkAdviceCode: "03", DeclineCode: "currency_not_supported", Network: Mastercard},
			class: Never, code: "03", source: SourceNetworkAdviceCode,
		},
		{
			name:  "currency_not_supported behind a generic network code",
			e:     Evidence{NetworkDeclineCode: "05", DeclineCode: "currency_not_supported", Network: Visa},
			class: Never, code: "currency_not_supported", source: SourceDeclineCode, category: 4, hold: HoldCurrency,
		},
		{
			name:  "pin_try_exceeded behind Visa 75",
			e:     Evidence{NetworkDeclineCode: "75", DeclineCode: "pin_try_exceeded", Network: Visa},
			class: FixData, code: "75", source: SourceNetworkDeclineCode, category: 2, hold: HoldCard,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Classify(tt.e)
			if got.Class != tt.class {
				t.Errorf("class: got %q, want %q", got.Class, tt.class)
			}
			if got.Code != tt.code || got.Source != tt.source {
				t.Errorf("decided by: got %q from %q, want %q from %q", got.Code, got.Source, tt.code, tt.source)
			}
			if got.Category != tt.category {
				t.Errorf("category: got %d, want %d", got.Category, tt.category)
			}
			if got.Hold != tt.hold {
				t.Errorf("hold: got %q, want %q", got.Hold, tt.hold)
			}
		})
	}
}

func TestClassifyProcessorRefusals(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name       string
		e          Evidence
		class      Class
		capReached bool
		blocked    bool
	}{
		{
			name: "previously_declined_do_not_retry in outcome",
			e: Evidence{DeclineCode: "generic_decline", NetworkStatus: "not_sent_to_network",
				OutcomeReason: "previously_declined_do_not_retry", Network: Visa},
			class: Generic, capReached: true, blocked: true,
		},
		{
			name:  "previously_declined_do_not_retry as decline code",
			e:     Evidence{DeclineCode: "previously_declined_do_not_retry", Network: Visa},
			class: Generic, capReached: true, blocked: true,
		},
		{
			name:  "radar block",
			e:     Evidence{DeclineCode: "fraudulent", NetworkStatus: "not_sent_to_network", OutcomeReason: "highest_risk_level"},
			class: Never, blocked: true,
		},
		{
			name:  "issuer decline",
			e:     Evidence{DeclineCode: "insufficient_funds", NetworkStatus: "declined_by_network"},
			class: Funds,
		},
		{
			name:    "card_decline_rate_limit_exceeded",
			e:       Evidence{Code: "card_decline_rate_limit_exceeded", Network: Visa},
			class:   Generic,
			blocked: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Classify(tt.e)
			if got.Class != tt.class {
				t.Errorf("class: got %q, want %q", got.Class, tt.class)
			}
			if got.CapReached != tt.capReached {
				t.Errorf("cap reached: got %v, want %v", got.CapReached, tt.capReached)
			}
			if got.Blocked != tt.blocked {
				t.Errorf("blocked: got %v, want %v", got.Blocked, tt.blocked)
			}
		})
	}
}

func TestParseClass(t *testing.T) {
	t.Parallel()

	for _, c := range []Class{Never, FixData, Authenticate, Funds, IssuerTransient, Generic} {
		got, err := ParseClass(c.String())
		if err != nil || got != c {
			t.Errorf("ParseClass(%q): got %q, %v, want %q, nil", c, got, err, c)
		}
	}
	for _, s := range []string{"", "Never", "retry", "fix data"} {
		if _, err := ParseClass(s); err == nil {
			t.Errorf("ParseClass(%q): got nil error, want one", s)
		}
	}
}

func TestParseNetwork(t *testing.T) {
	t.Parallel()

	tests := map[string]Network{
		"visa": Visa, "Visa": Visa, "mastercard": Mastercard, "MasterCard": Mastercard,
		"amex": Amex, "American Express": Amex, "american_express": Amex, "discover": Discover,
		"jcb": UnknownNetwork, "unionpay": UnknownNetwork, "": UnknownNetwork, "cartes_bancaires": UnknownNetwork,
	}
	for in, want := range tests {
		if got := ParseNetwork(in); got != want {
			t.Errorf("ParseNetwork(%q): got %q, want %q", in, got, want)
		}
	}
	if got := Network("").String(); got != "unknown" {
		t.Errorf("empty network: got %q, want %q", got, "unknown")
	}
}

func FuzzClassify(f *testing.F) {
	f.Add("51", "", "", "insufficient_funds", "", "visa", "", "")
	f.Add("05", "03", "try_again_later", "generic_decline", "card_declined", "mastercard", "", "")
	f.Add(" n7", "24", "confirm_card_data", "expired_card", "expired_card", "", "not_sent_to_network", "previously_declined_do_not_retry")
	f.Add("\x00", "9999", "do_not_try_again", "\u00e9", "", "amex", "", "")
	f.Add("83", "", "do_not_try_again", "fraudulent", "", "visa", "", "")
	f.Add("05", "", "", "duplicate_transaction", "", "visa", "", "")
	f.Add("", "", "", "", "card_decline_rate_limit_exceeded", "", "", "")
	f.Add("57", "", "", "currency_not_supported", "", "visa", "", "")
	f.Fuzz(func(t *testing.T, netCode, mac, advice, dcode, code, brand, status, reason string) {
		e := Evidence{
			NetworkDeclineCode: netCode, NetworkAdviceCode: mac, AdviceCode: advice, DeclineCode: dcode, Code: code,
			Network: ParseNetwork(brand), NetworkStatus: status, OutcomeReason: reason,
		}
		got := Classify(e)
		if !got.Class.Valid() {
			t.Fatalf("class: got %q, want a valid class", got.Class)
		}
		if got.Network == "" || got.Network != got.Network.known() {
			t.Fatalf("network: got %q, want a known network", got.Network)
		}
		if got.Network == Visa && (got.Category < 1 || got.Category > 4) {
			t.Fatalf("visa category: got %d, want 1 to 4", got.Category)
		}
		if got.Network != Visa && got.Category != CategoryNone {
			t.Fatalf("category on %s: got %d, want 0", got.Network, got.Category)
		}
		if got.CapReached && !got.Blocked {
			t.Fatalf("cap reached but not blocked")
		}
		if got.Source == SourceNone && got.Code != "" {
			t.Fatalf("code %q without a source", got.Code)
		}
		if got.Hold != HoldNone && !got.Hold.fits(got.Class) {
			t.Fatalf("hold %q on a %q decline", got.Hold, got.Class)
		}
		if ParseHold(got.Hold.String()) != got.Hold {
			t.Fatalf("hold %q does not parse back", got.Hold)
		}
		if again := Classify(e); again != got {
			t.Fatalf("not deterministic: got %+v, then %+v", got, again)
		}
	})
}

func FuzzNormalizeNetworkCode(f *testing.F) {
	for _, s := range []string{"05", "5", " n7 ", "R0", "", "1a", "\u00df", "\t9\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := normalizeNetworkCode(s)
		if again := normalizeNetworkCode(got); again != got {
			t.Fatalf("not idempotent: %q gives %q, then %q", s, got, again)
		}
		if len(got) == 1 && got[0] >= '0' && got[0] <= '9' {
			t.Fatalf("lone digit %q not padded", got)
		}
		if c, ok := networkCodes[got]; ok && !c.class.Valid() {
			t.Fatalf("code %q maps to invalid class %q", got, c.class)
		}
	})
}
