package decline

import (
	"slices"
	"testing"
	"time"
)

// TestAuditInHindsight: an attempt sent while an earlier attempt's outcome was unknown, which
// that outcome — found later — forbids, broke the rule only in hindsight: the gateway could not
// know. It is listed apart from the violations, which count only rules broken against what
// was known when the attempt was sent.
func TestAuditInHindsight(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name          string
		h             History
		wantRules     []Rule
		wantHindsight []Rule
	}{
		{"a never-class decline found after the next attempt", History{
			{Charge: "ch_pending", At: t0, Outcome: Declined, Class: Never, Network: Visa, KnownAt: t0.Add(time.Hour)},
			{Charge: "ch_next", At: t0.Add(time.Minute), Outcome: Approved, Network: Visa, KnownAt: t0.Add(time.Minute)},
		}, nil, []Rule{RuleAfterNever}},
		{"a never-class decline known before the next attempt", History{
			{Charge: "ch_lost", At: t0, Outcome: Declined, Class: Never, Network: Visa, KnownAt: t0.Add(time.Second)},
			{Charge: "ch_next", At: t0.Add(time.Minute), Outcome: Approved, Network: Visa},
		}, []Rule{RuleAfterNever}, nil},
		{"no known time: known when sent", History{
			{Charge: "ch_lost", At: t0, Outcome: Declined, Class: Never, Network: Visa},
			{Charge: "ch_next", At: t0.Add(time.Minute), Outcome: Approved, Network: Visa},
		}, []Rule{RuleAfterNever}, nil},
		{"a late never-class decline, then a known one", History{
			{Charge: "ch_pending", At: t0, Outcome: Declined, Class: Never, Network: Visa, KnownAt: t0.Add(time.Hour)},
			{Charge: "ch_lost", At: t0.Add(time.Minute), Outcome: Declined, Class: Never, Network: Visa},
			{Charge: "ch_next", At: t0.Add(2 * time.Minute), Outcome: Approved, Network: Visa},
		}, []Rule{RuleAfterNever}, []Rule{RuleAfterNever}},
		{"a Mastercard advice delay found after the next attempt", History{
			{Charge: "ch_pending", At: t0, Outcome: Declined, Class: Funds, MAC: 24, Network: Mastercard, KnownAt: t0.Add(time.Hour)},
			{Charge: "ch_next", At: t0.Add(time.Minute), Outcome: Approved, Network: Mastercard},
		}, nil, []Rule{RuleBeforeMACDelay}},
		{"a run opened by a decline found after sixteen timeouts", withPendings(
			Attempt{Charge: "ch_first", At: t0, Outcome: Declined, Class: Funds, Network: Visa, KnownAt: t0.Add(100 * time.Hour)},
			16, Visa), nil, []Rule{RuleVisa30d}},
		{"sixteen timeouts in a run opened by a known decline", withPendings(
			Attempt{Charge: "ch_first", At: t0, Outcome: Declined, Class: Funds, Network: Visa},
			16, Visa), []Rule{RuleVisa30d}, nil},
		{"an eleventh Mastercard decline, the tenth found after it", History{
			{Charge: "ch_1", At: t0, Outcome: Declined, Class: Funds, Network: Mastercard},
			{Charge: "ch_2", At: t0.Add(1 * time.Minute), Outcome: Declined, Class: Funds, Network: Mastercard},
			{Charge: "ch_3", At: t0.Add(2 * time.Minute), Outcome: Declined, Class: Funds, Network: Mastercard},
			{Charge: "ch_4", At: t0.Add(3 * time.Minute), Outcome: Declined, Class: Funds, Network: Mastercard},
			{Charge: "ch_5", At: t0.Add(4 * time.Minute), Outcome: Declined, Class: Funds, Network: Mastercard},
			{Charge: "ch_6", At: t0.Add(5 * time.Minute), Outcome: Declined, Class: Funds, Network: Mastercard},
			{Charge: "ch_7", At: t0.Add(6 * time.Minute), Outcome: Declined, Class: Funds, Network: Mastercard},
			{Charge: "ch_8", At: t0.Add(7 * time.Minute), Outcome: Declined, Class: Funds, Network: Mastercard},
			{Charge: "ch_9", At: t0.Add(8 * time.Minute), Outcome: Declined, Class: Funds, Network: Mastercard},
			{Charge: "ch_10", At: t0.Add(9 * time.Minute), Outcome: Declined, Class: Funds, Network: Mastercard, KnownAt: t0.Add(time.Hour)},
			{Charge: "ch_11", At: t0.Add(20 * time.Minute), Outcome: Declined, Class: Funds, Network: Mastercard},
		}, nil, []Rule{RuleMastercard24h}},
		{"an eleventh Mastercard decline sent while the tenth was in flight", append(
			declines(10, t0, time.Minute, Mastercard, Funds)[:9],
			Attempt{Charge: "ch_10", At: t0.Add(9 * time.Minute), Outcome: Declined, Class: Funds, Network: Mastercard, KnownAt: t0.Add(9*time.Minute + 2*time.Second)},
			Attempt{Charge: "ch_11", At: t0.Add(9*time.Minute + time.Second), Outcome: Declined, Class: Funds, Network: Mastercard},
		), []Rule{RuleMastercard24h}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := Audit(tc.h, Caps{})
			if got := rules(f.Violations); !slices.Equal(got, tc.wantRules) {
				t.Errorf("violations: got %v, want %v", got, tc.wantRules)
			}
			if got := rules(f.InHindsight); !slices.Equal(got, tc.wantHindsight) {
				t.Errorf("in hindsight: got %v, want %v", got, tc.wantHindsight)
			}
		})
	}
}

// withPendings returns first followed by n attempts an hour apart whose outcomes are still
// unknown, on network.
func withPendings(first Attempt, n int, network Network) History {
	h := History{first}
	for i := 1; i <= n; i++ {
		h = append(h, Attempt{Charge: "ch_timeout", At: first.At.Add(time.Duration(i) * time.Hour), Outcome: Pending, Network: network})
	}
	return h
}
