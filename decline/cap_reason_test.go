package decline

import (
	"testing"
	"time"
)

// TestCheckCapReachedIsTheReason: a network count cap in force is network_cap_reached on
// every network, with the time its window frees as NotBefore, even when a schedule slot or
// a Mastercard advice delay lifts later; too_early is only for those, once no cap is in
// force.
func TestCheckCapReachedIsTheReason(t *testing.T) {
	t.Parallel()

	// Ten Mastercard declines an hour apart, the last one an original charge (its own
	// chain) on the generic schedule: its first slot, t0+9h+2d, comes after the 24-hour
	// window frees at t0+24h.
	mcChain := declines(10, t0, time.Hour, Mastercard, Generic)
	mcChain[9].Chain = "ch_9"
	// Ten Mastercard declines a minute apart, each asking to retry after 24 hours (MAC 25):
	// the last delay ends a little after the window frees.
	mcAdvice := declines(10, t0, time.Minute, Mastercard, Funds)
	for i := range mcAdvice {
		mcAdvice[i].MAC = MACRetryAfter24Hours
	}
	// Both the cap (t0+24h) and a MAC 27 delay (t0+9h+4d).
	mcLongAdvice := declines(10, t0, time.Hour, Mastercard, Funds)
	mcLongAdvice[9].MAC = MACRetryAfter4Days
	// Visa: sixteen declines an hour apart, the last one a chain of its own.
	visaChain := declines(16, t0, time.Hour, Visa, Generic)
	visaChain[15].Chain = "ch_15"

	tests := []struct {
		name      string
		h         History
		next      Next
		rule      Rule
		notBefore time.Time // when the window frees
		allowedAt time.Time // when every refusal has lifted
	}{
		{"mastercard 24h cap before a later schedule slot", mcChain,
			Next{At: t0.Add(10 * time.Hour), Network: Mastercard, Chain: "ch_9"}, RuleMastercard24h,
			t0.Add(24 * time.Hour), t0.Add(9*time.Hour + 2*day)},
		{"mastercard 24h cap, a new charge", mcChain,
			Next{At: t0.Add(10 * time.Hour), Network: Mastercard}, RuleMastercard24h,
			t0.Add(24 * time.Hour), t0.Add(24 * time.Hour)},
		{"mastercard 24h cap before a later advice delay", mcAdvice,
			Next{At: t0.Add(10 * time.Minute), Network: Mastercard}, RuleMastercard24h,
			t0.Add(24 * time.Hour), t0.Add(9*time.Minute + 24*time.Hour)},
		{"mastercard 24h cap before a MAC 27 delay", mcLongAdvice,
			Next{At: t0.Add(10 * time.Hour), Network: Mastercard}, RuleMastercard24h,
			t0.Add(24 * time.Hour), t0.Add(9*time.Hour + 4*day)},
		{"unknown network gets the mastercard cap", mcChain,
			Next{At: t0.Add(10 * time.Hour), Chain: "ch_9"}, RuleMastercard24h,
			t0.Add(24 * time.Hour), t0.Add(9*time.Hour + 2*day)},
		{"visa 30d cap", visaChain,
			Next{At: t0.Add(16 * time.Hour), Network: Visa, Chain: "ch_15"}, RuleVisa30d,
			t0.Add(time.Hour + 30*day), t0.Add(time.Hour + 30*day)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Check(tt.h, tt.next, Caps{})
			assertVerdict(t, got, false, ReasonNetworkCapReached, tt.notBefore)
			if got.Rule != tt.rule {
				t.Errorf("rule: got %q, want %q", got.Rule, tt.rule)
			}
			if got.RemainingInWindow != 0 {
				t.Errorf("remaining: got %d, want 0", got.RemainingInWindow)
			}
			// The cap lifts when the window frees, and not a nanosecond earlier; a
			// later schedule slot or advice delay is too early until it ends.
			next := tt.next
			next.At = got.NotBefore.Add(-time.Nanosecond)
			if early := Check(tt.h, next, Caps{}); early.Reason != ReasonNetworkCapReached {
				t.Errorf("a nanosecond before %v: got %q, want %q", got.NotBefore, early.Reason, ReasonNetworkCapReached)
			}
			next.At = got.NotBefore
			if at := Check(tt.h, next, Caps{}); tt.allowedAt.After(got.NotBefore) {
				assertVerdict(t, at, false, ReasonTooEarly, tt.allowedAt)
			} else {
				assertVerdict(t, at, true, "", time.Time{})
			}
			next.At = tt.allowedAt
			assertVerdict(t, Check(tt.h, next, Caps{}), true, "", time.Time{})
		})
	}

	// Once the window has freed, what still refuses is too early.
	got := Check(mcChain, Next{At: t0.Add(24 * time.Hour), Network: Mastercard, Chain: "ch_9"}, Caps{})
	if got.Rule != RuleSchedule || got.RemainingInWindow != 1 {
		t.Errorf("rule, remaining: got %q, %d, want %q, 1", got.Rule, got.RemainingInWindow, RuleSchedule)
	}
}
