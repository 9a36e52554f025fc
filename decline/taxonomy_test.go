package decline

import (
	"testing"
	"time"
)

func TestClassifyNetworkCodes(t *testing.T) {
	t.Parallel()

	tests := []struct {
		code     string
		class    Class
		category Category
	}{
		// Visa category 1.
		{"04", Never, 1}, {"07", Never, 1}, {"12", Never, 1}, {"14", Never, 1},
		{"15", Never, 1}, {"41", Never, 1}, {"43", Never, 1}, {"46", Never, 1},
		{"57", Never, 1}, {"R0", Never, 1}, {"R1", Never, 1}, {"R3", Never, 1},
		// Visa category 3.
		{"54", FixData, 3}, {"55", FixData, 3}, {"82", FixData, 3}, {"N7", FixData, 3},
		{"1A", Authenticate, 3},
		// Visa category 2.
		{"51", Funds, 2}, {"61", Funds, 2}, {"65", Funds, 2},
		{"19", IssuerTransient, 2}, {"91", IssuerTransient, 2}, {"96", IssuerTransient, 2},
		// Visa category 4, and codes this package does not know.
		{"05", Generic, 4}, {"N0", Generic, 4}, {"99", Generic, 4},
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
			if got.Code != tt.code || got.Source != SourceNetworkDeclineCode {
				t.Errorf("decided by: got %q from %q, want %q from %q", got.Code, got.Source, tt.code, SourceNetworkDeclineCode)
			}
			if got.Network != Visa {
				t.Errorf("network: got %q, want %q", got.Network, Visa)
			}
			// The same code on Mastercard has the same class and no category.
			mc := Classify(Evidence{NetworkDeclineCode: tt.code, Network: Mastercard})
			if mc.Class != tt.class || mc.Category != CategoryNone {
				t.Errorf("on mastercard: got %q category %d, want %q category 0", mc.Class, mc.Category, tt.class)
			}
		})
	}
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

// stripeDeclineCodes is every Stripe decline code with the class it must
// get, written out rather than derived from the table under test.
var stripeDeclineCodes = map[string]Class{
	"do_not_try_again":                  Never,
	"lost_card":                         Never,
	"stolen_card":                       Never,
	"pickup_card":                       Never,
	"invalid_account":                   Never,
	"revocation_of_authorization":       Never,
	"revocation_of_all_authorizations":  Never,
	"stop_payment_order":                Never,
	"restricted_card":                   Never,
	"transaction_not_allowed":           Never,
	"not_permitted":                     Never,
	"card_not_supported":                Never,
	"currency_not_supported":            Never,
	"fraudulent":                        Never,
	"merchant_blacklist":                Never,
	"testmode_decline":                  Never,
	"expired_card":                      FixData,
	"incorrect_cvc":                     FixData,
	"invalid_cvc":                       FixData,
	"authentication_required":           Authenticate,
	"incorrect_number":                  FixData,
	"invalid_number":                    FixData,
	"invalid_expiry_month":              FixData,
	"invalid_expiry_year":               FixData,
	"incorrect_zip":                     FixData,
	"incorrect_pin":                     FixData,
	"invalid_pin":                       FixData,
	"offline_pin_required":              FixData,
	"online_or_offline_pin_required":    FixData,
	"new_account_information_available": FixData,
	"insufficient_funds":                Funds,
	"card_velocity_exceeded":            Funds,
	"withdrawal_count_limit_exceeded":   Funds,
	"issuer_not_available":              IssuerTransient,
	"processing_error":                  IssuerTransient,
	"reenter_transaction":               IssuerTransient,
	"try_again_later":                   IssuerTransient,
	"approve_with_id":                   IssuerTransient,
	"generic_decline":                   Generic,
	"do_not_honor":                      Generic,
	"call_issuer":                       Generic,
	"no_action_taken":                   Generic,
	"security_violation":                Generic,
	"service_not_allowed":               Generic,
	"invalid_amount":                    Generic,
	"duplicate_transaction":             Generic,
	"pin_try_exceeded":                  Generic,
	"a_code_stripe_adds_next_year":      Generic,
}

func TestClassifyDeclineCodes(t *testing.T) {
	t.Parallel()

	for code, want := range stripeDeclineCodes {
		t.Run(code, func(t *testing.T) {
			t.Parallel()
			got := Classify(Evidence{DeclineCode: code, Network: Visa})
			if got.Class != want {
				t.Errorf("class: got %q, want %q", got.Class, want)
			}
			if got.Code != code || got.Source != SourceDeclineCode {
				t.Errorf("decided by: got %q from %q, want %q from %q", got.Code, got.Source, code, SourceDeclineCode)
			}
			if wantCat := want.VisaCategory(); got.Category != wantCat {
				t.Errorf("visa category: got %d, want %d", got.Category, wantCat)
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

func TestClassifyVisaCategoryOfStripeCodes(t *testing.T) {
	t.Parallel()

	tests := []struct {
		code string
		want Category
	}{
		{"insufficient_funds", 2},
		{"issuer_not_available", 2},
		{"lost_card", 1},
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
			class: FixData, code: "expired_card", source: SourceDeclineCode,
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
			class: FixData, code: "N7", source: SourceNetworkDeclineCode, category: 3,
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
			class: FixData, code: "incorrect_cvc", source: SourceDeclineCode, category: 4,
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
	f.Add("51", "", "", "insufficient_funds", "visa", "", "")
	f.Add("05", "03", "try_again_later", "generic_decline", "mastercard", "", "")
	f.Add(" n7", "24", "confirm_card_data", "expired_card", "", "not_sent_to_network", "previously_declined_do_not_retry")
	f.Add("\x00", "9999", "do_not_try_again", "\u00e9", "amex", "", "")
	f.Fuzz(func(t *testing.T, netCode, mac, advice, dcode, brand, status, reason string) {
		e := Evidence{
			NetworkDeclineCode: netCode, NetworkAdviceCode: mac, AdviceCode: advice, DeclineCode: dcode,
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
		if c, ok := networkCodes[got]; ok && !c.Valid() {
			t.Fatalf("code %q maps to invalid class %q", got, c)
		}
	})
}
