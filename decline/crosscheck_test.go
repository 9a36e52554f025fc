package decline

import (
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// TestCheckAgreesWithAudit drives random card histories through Check and
// recounts them with Audit, whose code is separate:
//
//   - an attempt sent only when Check allows it never shows up as a
//     violation;
//   - an attempt sent when Check refused it for a network rule shows up as
//     a violation of that rule.
func TestCheckAgreesWithAudit(t *testing.T) {
	t.Parallel()

	var (
		mu   sync.Mutex
		seen = map[Rule]int{}
	)
	t.Cleanup(func() {
		t.Logf("refusals by rule: %v", seen)
		// Every rule refused somewhere, or the test proves little.
		for _, r := range []Rule{RuleAfterNever, RuleFixData, RuleVisa30d, RuleMastercard24h,
			RuleMastercard30d, RuleBeforeMACDelay, RuleSchedule, RuleAnotherCard, RuleProcessorRateLimit,
			RulePossibleDuplicate} {
			if seen[r] == 0 {
				t.Errorf("no simulation was refused by %q", r)
			}
		}
	})
	networks := []Network{Visa, Mastercard, UnknownNetwork, Amex}
	capsets := []Caps{{}, {VisaReattempts30d: 20}, {VisaReattempts30d: 3, MastercardDeclines24h: 2, MastercardDeclines30d: 5}}
	for seed := uint64(1); seed <= 60; seed++ {
		network := networks[seed%uint64(len(networks))]
		caps := capsets[seed%uint64(len(capsets))]
		t.Run(fmt.Sprintf("seed %d %s", seed, network), func(t *testing.T) {
			t.Parallel()
			got := simulate(t, rand.New(rand.NewPCG(seed, seed*7919)), network, caps)
			mu.Lock()
			defer mu.Unlock()
			for r, n := range got {
				seen[r] += n
			}
		})
	}
}

// simulate runs one card's random history and returns how often each rule
// refused an attempt.
func simulate(t *testing.T, rng *rand.Rand, network Network, caps Caps) map[Rule]int {
	t.Helper()
	refused := map[Rule]int{}
	classes := []Class{Funds, Funds, IssuerTransient, Generic, Generic, FixData, Never, Authenticate}
	networkRules := map[Rule]bool{
		RuleAfterNever: true, RuleBeforeMACDelay: true,
		RuleVisa30d: true, RuleMastercard24h: true, RuleMastercard30d: true,
	}
	var (
		h          History
		now        = t0
		chain      string
		expiry     = Expiry{2027, 1}
		wholeNever bool // a never-class decline that refuses every currency
	)
	pms := []string{"pm_a", "pm_b", "pm_c", ""}
	currencies := []string{"usd", "usd", "eur", ""}
	fixHolds := []Hold{HoldNone, HoldPaymentMethod, HoldExpiry, HoldCard}
	for step := 0; step < 400; step++ {
		// Mostly minutes to hours apart, sometimes days.
		if rng.IntN(10) == 0 {
			now = now.Add(time.Duration(rng.IntN(5*24)) * time.Hour)
		} else {
			now = now.Add(time.Duration(1+rng.IntN(180)) * time.Minute)
		}
		if rng.IntN(50) == 0 {
			expiry.Year++ // the cardholder's bank sent a new card
		}
		next := Next{At: now, Network: network, Expiry: expiry, PaymentMethod: pms[rng.IntN(len(pms))],
			Currency: currencies[rng.IntN(len(currencies))]}
		if chain != "" && rng.IntN(2) == 0 {
			next.Chain = chain
		}
		v := Check(h, next, caps)

		a := Attempt{Charge: fmt.Sprintf("ch_%d", step), At: now, Network: network, Expiry: expiry,
			PaymentMethod: next.PaymentMethod, Currency: next.Currency}
		switch r := rng.IntN(40); {
		case r < 4:
			a.Outcome = Approved
		case r < 8:
			a.Outcome = Pending
		case r < 9:
			// Stripe's refusal for too many declines: a block, for 24 hours.
			a.Outcome, a.Class, a.Hold = Blocked, Generic, HoldRateLimit
		default:
			a.Outcome = Declined
			a.Class = classes[rng.IntN(len(classes))]
			if network == Mastercard && rng.IntN(4) == 0 {
				a.MAC = MAC(24 + rng.IntN(7))
			}
			switch {
			case a.Class == Never && rng.IntN(2) == 0:
				a.Hold = HoldCurrency
			case a.Class == FixData:
				a.Hold = fixHolds[rng.IntN(len(fixHolds))]
			case a.Class == Generic && rng.IntN(4) == 0:
				a.Hold = HoldNoReattempt
			}
		}
		if next.Chain != "" {
			a.Chain = next.Chain
		} else {
			a.Chain = a.Charge
		}

		if v.Allowed {
			h = append(h, a)
			wholeNever = wholeNever || a.Outcome == Declined && a.Class == Never && a.Hold != HoldCurrency
			if got := Audit(h, caps); len(got.Violations) != 0 {
				t.Fatalf("step %d: Check allowed %+v, Audit found %+v", step, a, got.Violations)
			}
			if a.Outcome == Declined {
				chain = a.Chain
			}
			continue
		}
		refused[v.Rule]++
		switch {
		case v.Reason == ReasonNeverReattempt:
			if v.RemainingInWindow != 0 {
				t.Fatalf("step %d: never with remaining %d", step, v.RemainingInWindow)
			}
		case (network == Amex) != (v.RemainingInWindow == NoCap) || v.RemainingInWindow < NoCap:
			t.Fatalf("step %d: refused on %s with remaining %d", step, network, v.RemainingInWindow)
		}
		if v.Reason == ReasonNetworkCapReached && v.Rule != RuleProcessorCap && v.Rule != RuleProcessorRateLimit && v.RemainingInWindow != 0 {
			t.Fatalf("step %d: cap reached with remaining %d", step, v.RemainingInWindow)
		}
		if c := caps.withDefaults(); v.Reason == ReasonTooEarly && network.mastercardRules() &&
			(v.Counters.MastercardDeclines24h >= c.MastercardDeclines24h || v.Counters.MastercardDeclines30d >= c.MastercardDeclines30d) {
			t.Fatalf("step %d: too early with a mastercard cap reached (%+v), want network_cap_reached", step, v.Counters)
		}
		if !v.NotBefore.IsZero() && !v.NotBefore.After(now) {
			t.Fatalf("step %d: refused until %v, which is not after %v", step, v.NotBefore, now)
		}
		if !networkRules[v.Rule] {
			continue
		}
		// Send the refused attempt anyway, as a decline: Audit must see it.
		a.Outcome, a.Class, a.Hold = Declined, Generic, HoldNone
		got := Audit(append(h[:len(h):len(h)], a), caps)
		found := false
		for _, viol := range got.Violations {
			if viol.Charge == a.Charge && viol.Rule == v.Rule {
				found = true
			}
		}
		if !found {
			t.Fatalf("step %d: Check refused with %q, Audit found %+v", step, v.Rule, got.Violations)
		}
		if v.Rule == RuleAfterNever && wholeNever {
			return refused // nothing more can happen on this card
		}
	}
	return refused
}

func TestCheckLiftsAtNotBefore(t *testing.T) {
	t.Parallel()

	// A refusal with a NotBefore lifts at that instant if nothing else
	// happens, and not a nanosecond earlier. A cap lifts when its window
	// frees: a later schedule slot or advice delay may then refuse the
	// attempt as too early, until its own NotBefore.
	for seed := uint64(1); seed <= 30; seed++ {
		rng := rand.New(rand.NewPCG(seed, 17))
		network := []Network{Visa, Mastercard, UnknownNetwork}[seed%3]
		var h History
		now := t0
		for i := 0; i < 60; i++ {
			now = now.Add(time.Duration(1+rng.IntN(90)) * time.Minute)
			a := Attempt{At: now, Outcome: Declined, Class: []Class{Funds, Generic, IssuerTransient}[rng.IntN(3)], Network: network, Chain: "ch_0"}
			if network == Mastercard && rng.IntN(5) == 0 {
				a.MAC = MAC(24 + rng.IntN(3))
			}
			h = append(h, a)
		}
		for _, chain := range []string{"", "ch_0"} {
			next := Next{At: now.Add(time.Minute), Network: network, Chain: chain}
			v := Check(h, next, Caps{})
			if v.Allowed || v.NotBefore.IsZero() {
				continue
			}
			next.At = v.NotBefore.Add(-time.Nanosecond)
			if early := Check(h, next, Caps{}); early.Reason != v.Reason {
				t.Errorf("seed %d chain %q: a nanosecond before %v got %q, want %q", seed, chain, v.NotBefore, early.Reason, v.Reason)
			}
			next.At = v.NotBefore
			at := Check(h, next, Caps{})
			if at.Allowed {
				continue
			}
			if v.Reason != ReasonNetworkCapReached || at.Reason != ReasonTooEarly || !at.NotBefore.After(v.NotBefore) {
				t.Errorf("seed %d chain %q: refused at %v with %q until %v", seed, chain, v.NotBefore, at.Reason, at.NotBefore)
				continue
			}
			next.At = at.NotBefore
			if last := Check(h, next, Caps{}); !last.Allowed {
				t.Errorf("seed %d chain %q: refused at %v with %q until %v", seed, chain, at.NotBefore, last.Reason, last.NotBefore)
			}
		}
	}
}
