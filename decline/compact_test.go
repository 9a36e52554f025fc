package decline

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// compactCase draws a card's history: n attempts over about 70 days on few expiries and
// chains, with every outcome, class, advice code and processor refusal the rules read.
func compactCase(rng *rand.Rand, start time.Time, n int, network Network, prefix string) History {
	classes := []Class{Never, FixData, Authenticate, Funds, IssuerTransient, Generic, Generic, Funds}
	macs := []MAC{MACNone, MACNone, MACNone, MACTryLater, MACRetryAfter1Hour, MACRetryAfter24Hours, MACRetryAfter2Days, MACDoNotTryAgain}
	expiries := []Expiry{{}, {Year: 2030, Month: 1}, {Year: 2031, Month: 6}}
	holds := []Hold{HoldNone, HoldNone, HoldNone, HoldPaymentMethod, HoldExpiry, HoldCard, HoldCurrency, HoldRateLimit, HoldNoReattempt}
	at := start
	h := make(History, 0, n)
	for i := range n {
		// Bursts of attempts minutes apart, and gaps of days.
		if rng.IntN(4) == 0 {
			at = at.Add(time.Duration(rng.IntN(72)) * time.Hour)
		} else {
			at = at.Add(time.Duration(1+rng.IntN(90)) * time.Minute)
		}
		a := Attempt{Charge: fmt.Sprintf("%s%03d", prefix, i), Chain: fmt.Sprintf("chain%d", rng.IntN(4)), At: at,
			Network: network, Expiry: expiries[rng.IntN(len(expiries))],
			PaymentMethod: []string{"", "pm_a", "pm_b"}[rng.IntN(3)], Currency: []string{"", "usd", "eur"}[rng.IntN(3)]}
		if rng.IntN(8) == 0 {
			a.Network = []Network{Visa, Mastercard, Amex, ""}[rng.IntN(4)]
		}
		switch r := rng.IntN(20); {
		case r < 9:
			a.Outcome = Approved
		case r < 16:
			a.Outcome = Declined
		case r < 18:
			a.Outcome = Pending
		default:
			a.Outcome = Blocked
			a.CapReached = rng.IntN(2) == 0
		}
		if a.Outcome == Declined || a.Outcome == Blocked {
			a.Class = classes[rng.IntN(len(classes))]
			if a.Class == Never && rng.IntN(3) != 0 {
				a.Class = Generic // never-class refusals end every question: keep them rare
			}
			a.MAC = macs[rng.IntN(len(macs))]
			a.Hold = holds[rng.IntN(len(holds))]
		}
		h = append(h, a)
	}
	return h
}

// chainOf returns the attempts of h in chain.
func chainOf(h History, chain string) History {
	var out History
	for _, a := range h {
		if chain != "" && a.Chain == chain {
			out = append(out, a)
		}
	}
	return out
}

// TestCompactDecidesAsTheWholeHistory checks Compact's promise over random histories: the
// rules decide on the compact part, the chain's attempts and what came after exactly as on
// the whole history, for any attempt asked about later, also after compacting twice.
func TestCompactDecidesAsTheWholeHistory(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 11))
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	networks := []Network{Visa, Mastercard, Amex, ""}
	capsList := []Caps{DefaultCaps(), {VisaReattempts30d: 3, MastercardDeclines24h: 2, MastercardDeclines30d: 4}}
	kept, total := 0, 0
	for i := range 4000 {
		network := networks[rng.IntN(len(networks))]
		caps := capsList[rng.IntN(len(capsList))]
		folded := compactCase(rng, start, 5+rng.IntN(60), network, "a")
		// Every folded attempt is settled when it is compacted.
		foldAt := folded[len(folded)-1].At.Add(InFlight + time.Duration(rng.IntN(48))*time.Hour)
		later := compactCase(rng, foldAt, rng.IntN(12), network, "b")
		compact := Compact(folded, foldAt)
		kept += len(compact)
		total += len(folded)
		// Compacting again, later, over what came meanwhile keeps the promise too.
		var twice History
		split := rng.IntN(len(later) + 1)
		foldAgain := foldAt
		if split > 0 {
			foldAgain = later[split-1].At.Add(InFlight)
		}
		twice = Compact(append(append(History(nil), compact...), later[:split]...), foldAgain)
		last := foldAgain
		if len(later) > 0 && later[len(later)-1].At.After(last) {
			last = later[len(later)-1].At
		}
		for q := range 6 {
			next := Next{
				At:            last.Add(time.Duration(rng.IntN(40*24)) * time.Hour / time.Duration(1+rng.IntN(24))),
				Network:       networks[rng.IntN(len(networks))],
				Expiry:        []Expiry{{}, {Year: 2030, Month: 1}, {Year: 2031, Month: 6}}[rng.IntN(3)],
				PaymentMethod: []string{"", "pm_a", "pm_b", "pm_c"}[rng.IntN(4)],
				Currency:      []string{"", "usd", "eur"}[rng.IntN(3)],
			}
			if q%2 == 1 {
				next.Chain = fmt.Sprintf("chain%d", rng.IntN(5))
			}
			whole := append(append(History(nil), folded...), later...)
			want := Check(whole, next, caps)
			withChain := next
			withChain.ChainHistory = chainOf(whole, next.Chain)
			got := Check(Ordered(append(append(History(nil), compact...), later...)), withChain, caps)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("case %d: compact at %s decides %+v, the whole history %+v\nnext %+v\nwhole %v\ncompact %v",
					i, foldAt, got, want, next, whole, compact)
			}
			got2 := Check(Ordered(append(append(History(nil), twice...),
				later[split:]...)), withChain, caps)
			if !reflect.DeepEqual(got2, want) {
				t.Fatalf("case %d: compacted twice (at %s, %s) decides %+v, the whole history %+v\nnext %+v\nwhole %v\ntwice %v",
					i, foldAt, foldAgain, got2, want, next, whole, twice)
			}
		}
	}
	t.Logf("compact kept %d of %d attempts", kept, total)
}

// TestCompactLeavesOutAGoodCardsApprovals: a card approved 500 times, once declined 40 days
// ago, compacts to the run of that decline.
func TestCompactLeavesOutAGoodCardsApprovals(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	h := History{
		{Charge: "d", At: now.Add(-40 * day), Outcome: Declined, Class: Funds, Network: Visa},
	}
	for i := range 500 {
		h = append(h, Attempt{Charge: fmt.Sprintf("a%03d", i), At: now.Add(-39*day + time.Duration(i)*time.Hour),
			Outcome: Approved, Network: Visa})
	}
	got := Compact(h, now)
	if len(got) != 1 || got[0].Charge != "a000" {
		t.Fatalf("Compact kept %v, want the approval that ended the run alone", got)
	}
}
