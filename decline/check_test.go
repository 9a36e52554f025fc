package decline

import (
	"fmt"
	"testing"
	"time"
)

// declines returns n declined attempts of class c on network, the first at
// from, one every step.
func declines(n int, from time.Time, step time.Duration, network Network, c Class) History {
	h := make(History, n)
	for i := range h {
		h[i] = Attempt{
			Charge: fmt.Sprintf("ch_%d", i), At: from.Add(time.Duration(i) * step),
			Outcome: Declined, Class: c, Network: network,
		}
	}
	return h
}

// assertVerdict checks the parts of a verdict a test cares about.
func assertVerdict(t *testing.T, got Verdict, allowed bool, reason Reason, notBefore time.Time) {
	t.Helper()
	if got.Allowed != allowed {
		t.Errorf("allowed: got %v, want %v (reason %q, rule %q)", got.Allowed, allowed, got.Reason, got.Rule)
	}
	if got.Reason != reason {
		t.Errorf("reason: got %q, want %q", got.Reason, reason)
	}
	if !got.NotBefore.Equal(notBefore) {
		t.Errorf("not before: got %v, want %v", got.NotBefore, notBefore)
	}
}

func TestCheckVisaCapAcrossWindowEdge(t *testing.T) {
	t.Parallel()

	// An original decline, then 15 reattempts an hour apart, all declined.
	h := declines(16, t0, time.Hour, Visa, Generic)
	firstReattempt := t0.Add(time.Hour)
	edge := firstReattempt.Add(30 * day)

	tests := []struct {
		name      string
		at        time.Time
		caps      Caps
		allowed   bool
		reason    Reason
		notBefore time.Time
		remaining int
		count     int
	}{
		{"inside the window", t0.Add(20 * time.Hour), Caps{}, false, ReasonNetworkCapReached, edge, 0, 15},
		{"a nanosecond before the edge", edge.Add(-time.Nanosecond), Caps{}, false, ReasonNetworkCapReached, edge, 0, 15},
		{"on the edge the first reattempt leaves", edge, Caps{}, true, "", time.Time{}, 1, 14},
		{"cap of 20", t0.Add(20 * time.Hour), Caps{VisaReattempts30d: 20}, true, "", time.Time{}, 5, 15},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Check(h, Next{At: tt.at, Network: Visa}, tt.caps)
			assertVerdict(t, got, tt.allowed, tt.reason, tt.notBefore)
			if got.RemainingInWindow != tt.remaining {
				t.Errorf("remaining: got %d, want %d", got.RemainingInWindow, tt.remaining)
			}
			if got.Counters.VisaReattempts30d != tt.count {
				t.Errorf("count: got %d, want %d", got.Counters.VisaReattempts30d, tt.count)
			}
			if !got.Allowed && got.Rule != RuleVisa30d {
				t.Errorf("rule: got %q, want %q", got.Rule, RuleVisa30d)
			}
		})
	}
}

func TestCheckVisaCapWithTwentyReattempts(t *testing.T) {
	t.Parallel()

	h := declines(21, t0, time.Hour, Visa, Generic) // 20 reattempts
	got := Check(h, Next{At: t0.Add(21 * time.Hour), Network: Visa}, Caps{VisaReattempts30d: 20})
	assertVerdict(t, got, false, ReasonNetworkCapReached, t0.Add(time.Hour).Add(30*day))
}

func TestCheckApprovalEndsRun(t *testing.T) {
	t.Parallel()

	// A decline and 15 reattempts, the last approved: the run is over.
	h := declines(16, t0, time.Hour, Visa, Generic)
	h[15].Outcome = Approved
	at := t0.Add(20 * time.Hour)

	got := Check(h, Next{At: at, Network: Visa}, Caps{})
	assertVerdict(t, got, true, "", time.Time{})
	if got.Counters.VisaReattempts30d != 15 {
		t.Errorf("count: got %d, want 15 (the approval was a reattempt)", got.Counters.VisaReattempts30d)
	}

	// A new original decline after the approval opens a new run; its
	// reattempts count in the same rolling window as the old run's.
	h = append(h, Attempt{At: at, Outcome: Declined, Class: Funds, Network: Visa})
	got = Check(h, Next{At: at.Add(time.Hour), Network: Visa}, Caps{})
	assertVerdict(t, got, false, ReasonNetworkCapReached, t0.Add(time.Hour).Add(30*day))

	// Without the approval the original decline would have been the
	// sixteenth reattempt.
	all := declines(16, t0, time.Hour, Visa, Generic)
	a := Audit(append(all, Attempt{At: at, Outcome: Declined, Class: Funds, Network: Visa}), Caps{})
	if a.Reattempts != 16 || len(a.Violations) != 1 {
		t.Errorf("without approval: got %d reattempts, %d violations, want 16, 1", a.Reattempts, len(a.Violations))
	}
}

// TestCheckPendingIsNeutral: an unknown outcome is neither a decline nor an approval. Sent
// during a run of declines it is a reattempt; it opens no run and counts as no Mastercard
// decline, so timeouts alone never block a card.
func TestCheckPendingIsNeutral(t *testing.T) {
	t.Parallel()

	t.Run("visa reattempts during a run count", func(t *testing.T) {
		t.Parallel()
		h := declines(16, t0, time.Hour, Visa, Generic)
		for i := 1; i < len(h); i++ {
			h[i].Outcome = Pending
			h[i].Class = ""
		}
		got := Check(h, Next{At: t0.Add(20 * time.Hour), Network: Visa}, Caps{})
		assertVerdict(t, got, false, ReasonNetworkCapReached, t0.Add(time.Hour).Add(30*day))
	})
	t.Run("a pending original opens no run", func(t *testing.T) {
		t.Parallel()
		h := History{{At: t0, Outcome: Pending, Network: Visa}}
		h = append(h, declines(15, t0.Add(time.Hour), time.Hour, Visa, Generic)...)
		got := Check(h, Next{At: t0.Add(20 * time.Hour), Network: Visa}, Caps{})
		assertVerdict(t, got, true, "", time.Time{})
		if got.RemainingInWindow != 1 {
			t.Errorf("remaining in window: got %d, want 1", got.RemainingInWindow)
		}
	})
	t.Run("timeouts between approvals block nothing", func(t *testing.T) {
		t.Parallel()
		var h History
		for i := range 40 {
			o := Pending
			if i%2 == 1 {
				o = Approved
			}
			h = append(h, Attempt{At: t0.Add(time.Duration(i) * time.Minute), Outcome: o, Network: Visa})
		}
		got := Check(h, Next{At: t0.Add(time.Hour), Network: Visa}, Caps{})
		assertVerdict(t, got, true, "", time.Time{})
		if got.RemainingInWindow != 15 {
			t.Errorf("remaining in window: got %d, want 15", got.RemainingInWindow)
		}
	})
	t.Run("mastercard: a pending attempt is no decline", func(t *testing.T) {
		t.Parallel()
		h := declines(10, t0, time.Hour, Mastercard, Generic)
		h[9].Outcome = Pending
		got := Check(h, Next{At: t0.Add(10 * time.Hour), Network: Mastercard}, Caps{})
		assertVerdict(t, got, true, "", time.Time{})
		if got.RemainingInWindow != 1 {
			t.Errorf("remaining in window: got %d, want 1", got.RemainingInWindow)
		}
	})
	t.Run("an unknown outcome is pending", func(t *testing.T) {
		t.Parallel()
		h := declines(10, t0, time.Hour, Mastercard, Generic)
		h[9].Outcome = "mystery"
		got := Check(h, Next{At: t0.Add(10 * time.Hour), Network: Mastercard}, Caps{})
		assertVerdict(t, got, true, "", time.Time{})
	})
	t.Run("mastercard: an attempt in flight may be the tenth decline", func(t *testing.T) {
		t.Parallel()
		h := declines(9, t0, time.Hour, Mastercard, Generic)
		sent := t0.Add(9 * time.Hour)
		h = append(h, Attempt{At: sent, Outcome: Pending, Network: Mastercard})
		got := Check(h, Next{At: sent.Add(time.Second), Network: Mastercard}, Caps{})
		assertVerdict(t, got, false, ReasonNetworkCapReached, t0.Add(24*time.Hour))
		// Once its run has ended unknown, it is no decline.
		got = Check(h, Next{At: sent.Add(InFlight), Network: Mastercard}, Caps{})
		assertVerdict(t, got, true, "", time.Time{})
	})
	t.Run("mastercard: attempts in flight on a good card refuse nothing", func(t *testing.T) {
		t.Parallel()
		h := History{{At: t0, Outcome: Approved, Network: Mastercard}}
		for i := range 12 {
			h = append(h, Attempt{At: t0.Add(time.Hour + time.Duration(i)*time.Millisecond), Outcome: Pending, Network: Mastercard})
		}
		got := Check(h, Next{At: t0.Add(time.Hour + time.Second), Network: Mastercard}, Caps{})
		assertVerdict(t, got, true, "", time.Time{})
	})
	t.Run("mastercard: ten known declines refuse", func(t *testing.T) {
		t.Parallel()
		h := declines(10, t0, time.Hour, Mastercard, Generic)
		h = append(h, Attempt{At: t0.Add(10 * time.Hour), Outcome: Pending, Network: Mastercard})
		got := Check(h, Next{At: t0.Add(11 * time.Hour), Network: Mastercard}, Caps{})
		assertVerdict(t, got, false, ReasonNetworkCapReached, t0.Add(24*time.Hour))
	})
}

func TestCheckNeverIsForGood(t *testing.T) {
	t.Parallel()

	h := History{
		{At: t0, Outcome: Approved, Network: Visa},
		{At: t0.Add(day), Outcome: Declined, Class: Never, Network: Visa, Expiry: Expiry{2026, 4}},
	}
	tests := []struct {
		name string
		next Next
	}{
		{"a reattempt the next hour", Next{At: t0.Add(day + time.Hour), Network: Visa, Chain: "ch_1"}},
		{"a new charge a year later", Next{At: t0.Add(365 * day), Network: Visa}},
		{"a new expiry ten years later", Next{At: t0.Add(3650 * day), Network: Visa, Expiry: Expiry{2036, 4}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Check(h, tt.next, Caps{})
			assertVerdict(t, got, false, ReasonNeverReattempt, time.Time{})
			if got.RemainingInWindow != 0 {
				t.Errorf("remaining: got %d, want 0", got.RemainingInWindow)
			}
		})
	}

	// A never-class processor block counts too, and so does a later
	// approval not lift it.
	blocked := History{
		{At: t0, Outcome: Blocked, Class: Never},
		{At: t0.Add(time.Hour), Outcome: Approved},
	}
	assertVerdict(t, Check(blocked, Next{At: t0.Add(day)}, Caps{}), false, ReasonNeverReattempt, time.Time{})
}

func TestCheckFixData(t *testing.T) {
	t.Parallel()

	old := Expiry{Year: 2025, Month: 2}
	h := History{{At: t0, Outcome: Declined, Class: FixData, Network: Visa, Expiry: old, Chain: "ch_0"}}
	later := t0.Add(time.Hour)

	tests := []struct {
		name    string
		h       History
		next    Next
		allowed bool
		reason  Reason
	}{
		{"same expiry", h, Next{At: later, Network: Visa, Expiry: old}, false, ReasonFixDataFirst},
		{"unknown expiry", h, Next{At: later, Network: Visa}, false, ReasonFixDataFirst},
		{"same expiry, a reattempt", h, Next{At: later, Network: Visa, Expiry: old, Chain: "ch_0"}, false, ReasonFixDataFirst},
		{"new expiry", h, Next{At: later, Network: Visa, Expiry: Expiry{2028, 2}}, true, ""},
		{"new expiry, a reattempt: no schedule", h, Next{At: later, Network: Visa, Expiry: Expiry{2028, 2}, Chain: "ch_0"}, true, ""},
		{"decline with unknown expiry", History{{At: t0, Outcome: Declined, Class: FixData}}, Next{At: later, Expiry: Expiry{2028, 2}}, false, ReasonFixDataFirst},
		{"approved since", append(History{h[0]}, Attempt{At: later, Outcome: Approved}), Next{At: later.Add(time.Hour), Expiry: old}, true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Check(tt.h, tt.next, Caps{})
			assertVerdict(t, got, tt.allowed, tt.reason, time.Time{})
		})
	}
}

func TestCheckMACDelay(t *testing.T) {
	t.Parallel()

	for mac := MAC(24); mac <= 30; mac++ {
		t.Run(mac.String(), func(t *testing.T) {
			t.Parallel()
			h := History{{At: t0, Outcome: Declined, Class: Funds, Network: Mastercard, MAC: mac}}
			end := t0.Add(MACDelay(mac))

			got := Check(h, Next{At: end.Add(-time.Second), Network: Mastercard}, Caps{})
			assertVerdict(t, got, false, ReasonTooEarly, end)
			if got.Rule != RuleBeforeMACDelay {
				t.Errorf("rule: got %q, want %q", got.Rule, RuleBeforeMACDelay)
			}
			assertVerdict(t, Check(h, Next{At: end, Network: Mastercard}, Caps{}), true, "", time.Time{})
		})
	}
}

func TestCheckMACDelayMovesTheSchedule(t *testing.T) {
	t.Parallel()

	tests := []struct {
		mac  MAC
		slot time.Duration
	}{
		{24, 1 * day},
		{26, 3 * day},
		{29, 10 * day},
		{30, 10 * day},
	}
	for _, tt := range tests {
		t.Run(tt.mac.String(), func(t *testing.T) {
			t.Parallel()
			h := History{{At: t0, Outcome: Declined, Class: Funds, Network: Mastercard, MAC: tt.mac, Chain: "ch_0"}}
			got := Check(h, Next{At: t0.Add(time.Minute), Network: Mastercard, Chain: "ch_0"}, Caps{})
			assertVerdict(t, got, false, ReasonTooEarly, t0.Add(tt.slot))
		})
	}
}

func TestCheckEachScheduleSlot(t *testing.T) {
	t.Parallel()

	for _, class := range []Class{Funds, IssuerTransient, Generic} {
		t.Run(string(class), func(t *testing.T) {
			t.Parallel()
			h := History{{Charge: "ch_0", Chain: "ch_0", At: t0, Outcome: Declined, Class: class, Network: Visa}}
			for i, off := range Schedule(class) {
				slot := t0.Add(off)
				got := Check(h, Next{At: slot.Add(-time.Second), Network: Visa, Chain: "ch_0"}, Caps{})
				assertVerdict(t, got, false, ReasonTooEarly, slot)
				if got.Rule != RuleSchedule {
					t.Errorf("slot %d: rule: got %q, want %q", i, got.Rule, RuleSchedule)
				}
				assertVerdict(t, Check(h, Next{At: slot, Network: Visa, Chain: "ch_0"}, Caps{}), true, "", time.Time{})
				h = append(h, Attempt{Charge: fmt.Sprintf("ch_%d", i+1), Chain: "ch_0", At: slot, Outcome: Declined, Class: class, Network: Visa})
			}
			got := Check(h, Next{At: t0.Add(60 * day), Network: Visa, Chain: "ch_0"}, Caps{})
			assertVerdict(t, got, false, ReasonScheduleExhausted, time.Time{})

			// A new charge on the card is not bound by the chain's schedule.
			assertVerdict(t, Check(h, Next{At: t0.Add(60 * day), Network: Visa}, Caps{}), true, "", time.Time{})
		})
	}
}

func TestCheckScheduleAfterLateReattempt(t *testing.T) {
	t.Parallel()

	// A funds chain reattempted late, on day 4 instead of day 1: the next
	// slot is day 5, not day 3 at once.
	h := History{
		{Chain: "ch_0", At: t0, Outcome: Declined, Class: Funds, Network: Visa},
		{Chain: "ch_0", At: t0.Add(4 * day), Outcome: Declined, Class: Funds, Network: Visa},
	}
	got := Check(h, Next{At: t0.Add(4*day + time.Minute), Network: Visa, Chain: "ch_0"}, Caps{})
	assertVerdict(t, got, false, ReasonTooEarly, t0.Add(5*day))

	// A reattempt exactly on a later slot spends it.
	h[1].At = t0.Add(5 * day)
	got = Check(h, Next{At: t0.Add(5 * day), Network: Visa, Chain: "ch_0"}, Caps{})
	assertVerdict(t, got, false, ReasonTooEarly, t0.Add(7*day))
}

func TestCheckScheduleFollowsLatestClass(t *testing.T) {
	t.Parallel()

	// A funds decline, then an issuer-transient one: the offsets still count
	// from the first decline, now on the issuer-transient schedule.
	h := History{
		{Chain: "ch_0", At: t0, Outcome: Declined, Class: Funds, Network: Visa},
		{Chain: "ch_0", At: t0.Add(day), Outcome: Declined, Class: IssuerTransient, Network: Visa},
	}
	got := Check(h, Next{At: t0.Add(day + time.Minute), Network: Visa, Chain: "ch_0"}, Caps{})
	assertVerdict(t, got, false, ReasonTooEarly, t0.Add(3*day))
}

func TestCheckMastercard24h(t *testing.T) {
	t.Parallel()

	h := declines(10, t0, time.Hour, Mastercard, Generic)
	tests := []struct {
		name      string
		at        time.Time
		allowed   bool
		reason    Reason
		notBefore time.Time
		remaining int
	}{
		{"tenth decline an hour ago", t0.Add(10 * time.Hour), false, ReasonNetworkCapReached, t0.Add(24 * time.Hour), 0},
		{"a nanosecond before the first leaves", t0.Add(24*time.Hour - time.Nanosecond), false, ReasonNetworkCapReached, t0.Add(24 * time.Hour), 0},
		{"the first has left", t0.Add(24 * time.Hour), true, "", time.Time{}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Check(h, Next{At: tt.at, Network: Mastercard}, Caps{})
			assertVerdict(t, got, tt.allowed, tt.reason, tt.notBefore)
			if got.RemainingInWindow != tt.remaining {
				t.Errorf("remaining: got %d, want %d", got.RemainingInWindow, tt.remaining)
			}
			if !got.Allowed && got.Rule != RuleMastercard24h {
				t.Errorf("rule: got %q, want %q", got.Rule, RuleMastercard24h)
			}
		})
	}

	// Nine declines leave room for one more.
	got := Check(h[:9], Next{At: t0.Add(10 * time.Hour), Network: Mastercard}, Caps{})
	assertVerdict(t, got, true, "", time.Time{})
	if got.RemainingInWindow != 1 || got.Counters.MastercardDeclines24h != 9 {
		t.Errorf("remaining, count: got %d, %d, want 1, 9", got.RemainingInWindow, got.Counters.MastercardDeclines24h)
	}

	// Approvals do not reset Mastercard's count.
	mixed := append(declines(10, t0, time.Hour, Mastercard, Generic), Attempt{At: t0.Add(10 * time.Hour), Outcome: Approved, Network: Mastercard})
	assertVerdict(t, Check(mixed, Next{At: t0.Add(11 * time.Hour), Network: Mastercard}, Caps{}), false, ReasonNetworkCapReached, t0.Add(24*time.Hour))
}

func TestCheckMastercard30d(t *testing.T) {
	t.Parallel()

	// 35 declines eight hours apart: never more than 3 in 24 hours.
	h := declines(35, t0, 8*time.Hour, Mastercard, Generic)
	edge := t0.Add(30 * day)

	got := Check(h, Next{At: t0.Add(35 * 8 * time.Hour), Network: Mastercard}, Caps{})
	assertVerdict(t, got, false, ReasonNetworkCapReached, edge)
	if got.Rule != RuleMastercard30d {
		t.Errorf("rule: got %q, want %q", got.Rule, RuleMastercard30d)
	}
	if got.Counters.MastercardDeclines30d != 35 {
		t.Errorf("count: got %d, want 35", got.Counters.MastercardDeclines30d)
	}
	assertVerdict(t, Check(h, Next{At: edge.Add(-time.Nanosecond), Network: Mastercard}, Caps{}), false, ReasonNetworkCapReached, edge)
	assertVerdict(t, Check(h, Next{At: edge, Network: Mastercard}, Caps{}), true, "", time.Time{})
}

func TestCheckProcessorCapRefusal(t *testing.T) {
	t.Parallel()

	h := declines(5, t0, time.Hour, Visa, Generic)
	blockedAt := t0.Add(5 * time.Hour)
	h = append(h, Attempt{At: blockedAt, Outcome: Blocked, Class: Generic, Network: Visa, CapReached: true})

	got := Check(h, Next{At: blockedAt.Add(day), Network: Visa}, Caps{})
	assertVerdict(t, got, false, ReasonNetworkCapReached, blockedAt.Add(30*day))
	if got.Rule != RuleProcessorCap {
		t.Errorf("rule: got %q, want %q", got.Rule, RuleProcessorCap)
	}
	if got.Counters.VisaReattempts30d != 4 {
		t.Errorf("count: got %d, want 4 (a block is not an authorization)", got.Counters.VisaReattempts30d)
	}
	assertVerdict(t, Check(h, Next{At: blockedAt.Add(30 * day), Network: Visa}, Caps{}), true, "", time.Time{})
}

func TestCheckNetworks(t *testing.T) {
	t.Parallel()

	visaRun := declines(16, t0, time.Hour, Visa, Generic)
	mcRun := declines(10, t0, time.Hour, Mastercard, Generic)
	unknownRun := declines(16, t0, time.Hour, "", Generic)
	at := t0.Add(20 * time.Hour)

	tests := []struct {
		name      string
		h         History
		network   Network
		allowed   bool
		remaining int
	}{
		{"amex has no cap", visaRun, Amex, true, NoCap},
		{"discover has no cap", mcRun, Discover, true, NoCap},
		{"visa caps ignore mastercard declines", mcRun, Visa, true, 15},
		{"unknown network gets visa's cap", visaRun, "", false, 0},
		{"unknown network gets mastercard's cap", mcRun, UnknownNetwork, false, 0},
		{"unknown attempts count for visa", unknownRun, Visa, false, 0},
		{"unknown attempts count for mastercard", unknownRun, Mastercard, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := Check(tt.h, Next{At: at, Network: tt.network}, Caps{})
			if got.Allowed != tt.allowed {
				t.Errorf("allowed: got %v (%q), want %v", got.Allowed, got.Reason, tt.allowed)
			}
			if got.RemainingInWindow != tt.remaining {
				t.Errorf("remaining: got %d, want %d", got.RemainingInWindow, tt.remaining)
			}
		})
	}
}

func TestCheckBindingRefusal(t *testing.T) {
	t.Parallel()

	// Both the Mastercard cap (lifts at t0+24h) and a MAC 27 delay (lifts at
	// t0+9h+4d) refuse: the cap is the reason until its window frees.
	h := declines(10, t0, time.Hour, Mastercard, Funds)
	h[9].MAC = 27
	got := Check(h, Next{At: t0.Add(10 * time.Hour), Network: Mastercard}, Caps{})
	assertVerdict(t, got, false, ReasonNetworkCapReached, t0.Add(24*time.Hour))
	if got.Rule != RuleMastercard24h {
		t.Errorf("rule: got %q, want %q", got.Rule, RuleMastercard24h)
	}
	// Once the window frees, the delay alone is too early.
	got = Check(h, Next{At: t0.Add(24 * time.Hour), Network: Mastercard}, Caps{})
	assertVerdict(t, got, false, ReasonTooEarly, t0.Add(9*time.Hour+4*day))

	// With MAC 24 the cap lifts last.
	h[9].MAC = 24
	got = Check(h, Next{At: t0.Add(9*time.Hour + 30*time.Minute), Network: Mastercard}, Caps{})
	assertVerdict(t, got, false, ReasonNetworkCapReached, t0.Add(24*time.Hour))
}

func TestCheckEmptyHistory(t *testing.T) {
	t.Parallel()

	got := Check(nil, Next{At: t0, Network: Visa}, Caps{})
	assertVerdict(t, got, true, "", time.Time{})
	if got.RemainingInWindow != 15 {
		t.Errorf("remaining: got %d, want 15", got.RemainingInWindow)
	}
}

func TestCheckOrderDoesNotMatter(t *testing.T) {
	t.Parallel()

	h := declines(16, t0, time.Hour, Visa, Generic)
	reversed := make(History, len(h))
	for i := range h {
		reversed[len(h)-1-i] = h[i]
	}
	a := Check(h, Next{At: t0.Add(20 * time.Hour), Network: Visa}, Caps{})
	b := Check(reversed, Next{At: t0.Add(20 * time.Hour), Network: Visa}, Caps{})
	if a != b {
		t.Errorf("got %+v, want %+v", b, a)
	}
	if !h[0].At.Equal(t0) {
		t.Errorf("Check reordered its argument")
	}
}
