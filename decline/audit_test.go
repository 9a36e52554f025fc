package decline

import (
	"testing"
	"time"
)

// rules returns the rules of vs, in order.
func rules(vs []Violation) []Rule {
	out := make([]Rule, len(vs))
	for i, v := range vs {
		out[i] = v.Rule
	}
	return out
}

func TestAuditHandMadeHistory(t *testing.T) {
	t.Parallel()

	// One Visa card at one processor account over six weeks:
	//   day 0:  insufficient funds, then 16 reattempts an hour apart, the
	//           16th beyond the cap;
	//   day 2:  approved (ends the run);
	//   day 10: lost card (never);
	//   day 11: someone tried again anyway.
	var h History
	h = append(h, Attempt{Charge: "ch_orig", At: t0, Outcome: Declined, Class: Funds, Network: Visa})
	for i := 1; i <= 16; i++ {
		h = append(h, Attempt{Charge: "ch_re", At: t0.Add(time.Duration(i) * time.Hour), Outcome: Declined, Class: Funds, Network: Visa})
	}
	h = append(h,
		Attempt{Charge: "ch_ok", At: t0.Add(2 * day), Outcome: Approved, Network: Visa},
		Attempt{Charge: "ch_lost", At: t0.Add(10 * day), Outcome: Declined, Class: Never, Network: Visa},
		Attempt{Charge: "ch_bad", At: t0.Add(11 * day), Outcome: Declined, Class: Never, Network: Visa},
	)

	got := Audit(h, Caps{})
	if got.Attempts != 20 {
		t.Errorf("attempts: got %d, want 20", got.Attempts)
	}
	if got.Declines != 19 {
		t.Errorf("declines: got %d, want 19", got.Declines)
	}
	if got.DeclinesByClass[Funds] != 17 || got.DeclinesByClass[Never] != 2 {
		t.Errorf("declines by class: got %v, want funds 17, never 2", got.DeclinesByClass)
	}
	// 16 reattempts, the approval, and the attempt after the never decline.
	if got.Reattempts != 18 {
		t.Errorf("reattempts: got %d, want 18", got.Reattempts)
	}
	if got.MaxVisaReattempts30d != 18 {
		t.Errorf("max visa reattempts: got %d, want 18", got.MaxVisaReattempts30d)
	}
	want := []Violation{
		{Charge: "ch_re", At: t0.Add(16 * time.Hour), Rule: RuleVisa30d, Count: 16, Limit: 15},
		{Charge: "ch_ok", At: t0.Add(2 * day), Rule: RuleVisa30d, Count: 17, Limit: 15},
		{Charge: "ch_bad", At: t0.Add(11 * day), Rule: RuleAfterNever},
		{Charge: "ch_bad", At: t0.Add(11 * day), Rule: RuleVisa30d, Count: 18, Limit: 15},
	}
	if len(got.Violations) != len(want) {
		t.Fatalf("violations: got %v, want %v", got.Violations, want)
	}
	for i := range want {
		if got.Violations[i] != want[i] {
			t.Errorf("violation %d: got %+v, want %+v", i, got.Violations[i], want[i])
		}
	}

	// With a cap of 20 only the attempt after the never decline remains.
	got = Audit(h, Caps{VisaReattempts30d: 20})
	if r := rules(got.Violations); len(r) != 1 || r[0] != RuleAfterNever {
		t.Errorf("cap 20: got %v, want [after_never]", r)
	}
}

func TestAuditVisaWindowEdge(t *testing.T) {
	t.Parallel()

	// A decline, 15 reattempts an hour apart, then one more exactly 30 days
	// after the first reattempt: the first has left the window.
	h := declines(16, t0, time.Hour, Visa, Generic)
	h = append(h, Attempt{At: t0.Add(time.Hour).Add(30 * day), Outcome: Declined, Network: Visa})
	got := Audit(h, Caps{})
	if len(got.Violations) != 0 {
		t.Errorf("on the edge: got %v, want none", got.Violations)
	}
	if got.MaxVisaReattempts30d != 15 {
		t.Errorf("max: got %d, want 15", got.MaxVisaReattempts30d)
	}

	// A nanosecond earlier it is the sixteenth in the window.
	h[16].At = h[16].At.Add(-time.Nanosecond)
	got = Audit(h, Caps{})
	if r := rules(got.Violations); len(r) != 1 || r[0] != RuleVisa30d {
		t.Errorf("inside: got %v, want [visa_30d]", r)
	}
}

func TestAuditMastercard(t *testing.T) {
	t.Parallel()

	t.Run("24 hours", func(t *testing.T) {
		t.Parallel()
		h := declines(11, t0, time.Hour, Mastercard, Generic)
		got := Audit(h, Caps{})
		if r := rules(got.Violations); len(r) != 1 || r[0] != RuleMastercard24h {
			t.Errorf("got %v, want [mastercard_24h]", r)
		}
		if got.MaxMastercardDeclines24h != 11 {
			t.Errorf("max: got %d, want 11", got.MaxMastercardDeclines24h)
		}
		// Visa's count does not apply to a Mastercard card.
		if got.MaxVisaReattempts30d != 0 {
			t.Errorf("visa max: got %d, want 0", got.MaxVisaReattempts30d)
		}
	})
	t.Run("30 days", func(t *testing.T) {
		t.Parallel()
		h := declines(36, t0, 8*time.Hour, Mastercard, Generic)
		got := Audit(h, Caps{})
		if r := rules(got.Violations); len(r) != 1 || r[0] != RuleMastercard30d {
			t.Errorf("got %v, want [mastercard_30d]", r)
		}
		if got.MaxMastercardDeclines30d != 36 || got.MaxMastercardDeclines24h != 3 {
			t.Errorf("max: got %d in 30d, %d in 24h, want 36, 3", got.MaxMastercardDeclines30d, got.MaxMastercardDeclines24h)
		}
	})
	t.Run("approvals are not declines", func(t *testing.T) {
		t.Parallel()
		h := declines(10, t0, time.Hour, Mastercard, Generic)
		h = append(h, Attempt{At: t0.Add(10 * time.Hour), Outcome: Approved, Network: Mastercard})
		if got := Audit(h, Caps{}); len(got.Violations) != 0 {
			t.Errorf("got %v, want none", got.Violations)
		}
	})
}

func TestAuditMACDelay(t *testing.T) {
	t.Parallel()

	h := History{
		{Charge: "ch_0", At: t0, Outcome: Declined, Class: Funds, Network: Mastercard, MAC: 25},
		{Charge: "ch_1", At: t0.Add(23 * time.Hour), Outcome: Declined, Class: Funds, Network: Mastercard},
		{Charge: "ch_2", At: t0.Add(24 * time.Hour), Outcome: Approved, Network: Mastercard},
	}
	got := Audit(h, Caps{})
	want := Violation{Charge: "ch_1", At: t0.Add(23 * time.Hour), Rule: RuleBeforeMACDelay}
	if len(got.Violations) != 1 || got.Violations[0] != want {
		t.Errorf("got %+v, want [%+v]", got.Violations, want)
	}
}

func TestAuditBlocked(t *testing.T) {
	t.Parallel()

	// Processor blocks are attempts but not authorizations; an attempt after
	// a never-class block still breaks the never rule.
	h := History{
		{At: t0, Outcome: Declined, Class: Generic, Network: Visa},
		{At: t0.Add(time.Hour), Outcome: Blocked, Class: Generic, Network: Visa, CapReached: true},
		{At: t0.Add(2 * time.Hour), Outcome: Blocked, Class: Never, Network: Visa},
		{At: t0.Add(3 * time.Hour), Outcome: Blocked, Class: Generic, Network: Visa},
	}
	got := Audit(h, Caps{})
	if got.Attempts != 4 || got.Declines != 1 || got.Reattempts != 0 {
		t.Errorf("attempts, declines, reattempts: got %d, %d, %d, want 4, 1, 0", got.Attempts, got.Declines, got.Reattempts)
	}
	if r := rules(got.Violations); len(r) != 1 || r[0] != RuleAfterNever {
		t.Errorf("got %v, want [after_never]", r)
	}
}

func TestAuditEmpty(t *testing.T) {
	t.Parallel()

	got := Audit(nil, Caps{})
	if got.Attempts != 0 || got.Violations == nil || len(got.Violations) != 0 {
		t.Errorf("got %+v, want zero counts and an empty, non-nil list", got)
	}
}
