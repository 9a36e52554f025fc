package decline

import (
	"testing"
	"time"
)

// TestClassifyAuthentication: a decline asking for the cardholder's authentication (3-D
// Secure, Visa 1A) is neither a fix-data decline nor a retryable one: the same card works
// once the cardholder authenticates, and no merchant-initiated reattempt can.
func TestClassifyAuthentication(t *testing.T) {
	t.Parallel()

	tests := []struct {
		name     string
		e        Evidence
		class    Class
		code     string
		source   Source
		category Category
	}{
		{"stripe authentication_required on visa", Evidence{DeclineCode: "authentication_required", Network: Visa},
			Authenticate, "authentication_required", SourceDeclineCode, 3},
		{"visa 1A", Evidence{NetworkDeclineCode: "1A", Network: Visa}, Authenticate, "1A", SourceNetworkDeclineCode, 3},
		{"visa 1A with stripe's code", Evidence{NetworkDeclineCode: "1a", DeclineCode: "authentication_required", Network: Visa},
			Authenticate, "1A", SourceNetworkDeclineCode, 3},
		{"mastercard soft decline 65 with stripe's code",
			Evidence{NetworkDeclineCode: "65", DeclineCode: "authentication_required", Network: Mastercard},
			Authenticate, "authentication_required", SourceDeclineCode, 0},
		{"over a retry-after advice", Evidence{NetworkAdviceCode: "24", DeclineCode: "authentication_required", Network: Mastercard},
			Authenticate, "authentication_required", SourceDeclineCode, 0},
		{"over try_again_later", Evidence{AdviceCode: "try_again_later", DeclineCode: "authentication_required", Network: Visa},
			Authenticate, "authentication_required", SourceDeclineCode, 3},
		{"fix data still blocks", Evidence{NetworkDeclineCode: "1A", DeclineCode: "incorrect_cvc", Network: Visa},
			FixData, "incorrect_cvc", SourceDeclineCode, 3},
		{"never still blocks", Evidence{NetworkDeclineCode: "1A", DeclineCode: "stolen_card", Network: Visa},
			Never, "stolen_card", SourceDeclineCode, 3},
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
	if Authenticate.Retryable() || Schedule(Authenticate) != nil {
		t.Errorf("authenticate: got retryable %v, schedule %v, want no schedule", Authenticate.Retryable(), Schedule(Authenticate))
	}
	if got := Authenticate.VisaCategory(); got != CategoryDataQuality {
		t.Errorf("visa category: got %d, want 3 (Visa lists 1A in category 3)", got)
	}
}

// TestCheckAuthentication: after an authentication decline, new charges on the card stay
// allowed (the cardholder can authenticate), with the card's data unchanged; a reattempt of
// the declined chain, merchant-initiated and without the cardholder, is refused for good,
// so no automatic schedule runs it; and the decline counts for the network caps like any.
func TestCheckAuthentication(t *testing.T) {
	t.Parallel()

	exp := Expiry{Year: 2034, Month: 12}
	declined := Attempt{Charge: "ch_0", Chain: "ch_0", At: t0, Outcome: Declined, Class: Authenticate, Network: Visa, Expiry: exp}
	tests := []struct {
		name      string
		h         History
		next      Next
		allowed   bool
		reason    Reason
		notBefore time.Time
	}{
		{"a new charge at once, same card data", History{declined},
			Next{At: t0.Add(time.Minute), Network: Visa, Expiry: exp}, true, "", time.Time{}},
		{"a new charge of unknown expiry", History{declined},
			Next{At: t0.Add(time.Minute), Network: Visa}, true, "", time.Time{}},
		{"a reattempt of the chain", History{declined},
			Next{At: t0.Add(time.Minute), Network: Visa, Expiry: exp, Chain: "ch_0"}, false, ReasonScheduleExhausted, time.Time{}},
		{"a reattempt of the chain weeks later", History{declined},
			Next{At: t0.Add(30 * day), Network: Visa, Expiry: exp, Chain: "ch_0"}, false, ReasonScheduleExhausted, time.Time{}},
		{"a reattempt of a funds chain that then asked for authentication",
			History{{Chain: "ch_0", At: t0, Outcome: Declined, Class: Funds, Network: Visa},
				{Chain: "ch_0", At: t0.Add(day), Outcome: Declined, Class: Authenticate, Network: Visa}},
			Next{At: t0.Add(3 * day), Network: Visa, Chain: "ch_0"}, false, ReasonScheduleExhausted, time.Time{}},
		{"the visa cap counts them", declines(16, t0, time.Hour, Visa, Authenticate),
			Next{At: t0.Add(20 * time.Hour), Network: Visa}, false, ReasonNetworkCapReached, t0.Add(time.Hour).Add(30 * day)},
		{"the mastercard cap counts them", declines(10, t0, time.Hour, Mastercard, Authenticate),
			Next{At: t0.Add(10 * time.Hour), Network: Mastercard}, false, ReasonNetworkCapReached, t0.Add(24 * time.Hour)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Check(tt.h, tt.next, Caps{})
			assertVerdict(t, got, tt.allowed, tt.reason, tt.notBefore)
			if tt.reason == ReasonScheduleExhausted && got.Rule != RuleSchedule {
				t.Errorf("rule: got %q, want %q", got.Rule, RuleSchedule)
			}
		})
	}

	// Audit counts them as declines of their own class.
	f := Audit(declines(3, t0, time.Hour, Visa, Authenticate), Caps{})
	if f.Declines != 3 || f.DeclinesByClass[Authenticate] != 3 || f.Reattempts != 2 {
		t.Errorf("audit: got %d declines %v, %d reattempts, want 3 authenticate, 2 reattempts", f.Declines, f.DeclinesByClass, f.Reattempts)
	}
}
