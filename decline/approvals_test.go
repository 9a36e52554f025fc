package decline

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// Approvals older than every other attempt change no verdict: the store admits a card whose
// history holds nothing but approvals on the verdict over an empty history, and renders a
// later decline over that decline alone. Checked over random histories and next attempts.
func TestOlderApprovalsChangeNoVerdict(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	networks := []Network{Visa, Mastercard, "", "amex"}
	outcomes := []Outcome{Approved, Declined, Pending, Blocked}
	classes := []Class{Never, FixData, Authenticate, Generic, Class("insufficient_funds"), Class("")}
	macs := []MAC{0, 1, 2, 3, 4}
	chains := []string{"ch_a", "ch_b", "ch_c"}
	pms := []string{"pm_a", "pm_b", ""}
	currencies := []string{"usd", "eur", ""}
	holds := []Hold{HoldNone, HoldPaymentMethod, HoldExpiry, HoldCard, HoldCurrency, HoldRateLimit, HoldNoReattempt}
	pick := func(n int) int { return r.IntN(n) }
	for i := range 3000 {
		split := now.Add(-time.Duration(pick(40*24)) * time.Hour)
		var approvals, rest History
		for j := range pick(30) {
			approvals = append(approvals, Attempt{Charge: fmt.Sprintf("ch_ok%d", j), Chain: chains[pick(3)],
				At: split.Add(-time.Duration(1+pick(40*24*60)) * time.Minute), Outcome: Approved,
				Network: networks[pick(4)], Expiry: Expiry{Year: 2030, Month: 1 + pick(12)},
				PaymentMethod: pms[pick(3)], Currency: currencies[pick(3)]})
		}
		for j := range pick(20) {
			rest = append(rest, Attempt{Charge: fmt.Sprintf("ch_%d", j), Chain: chains[pick(3)],
				At: split.Add(time.Duration(pick(40*24*60)) * time.Minute), Outcome: outcomes[pick(4)],
				Class: classes[pick(len(classes))], Network: networks[pick(4)], MAC: macs[pick(5)],
				Expiry: Expiry{Year: 2030, Month: 1 + pick(12)}, CapReached: pick(4) == 0,
				PaymentMethod: pms[pick(3)], Currency: currencies[pick(3)], Hold: holds[pick(len(holds))]})
		}
		next := Next{At: now, Network: networks[pick(4)], Expiry: Expiry{Year: 2030, Month: 1 + pick(12)},
			PaymentMethod: pms[pick(3)], Currency: currencies[pick(3)]}
		if pick(2) == 0 {
			next.Chain = chains[pick(3)]
		}
		with := append(append(History(nil), approvals...), rest...)
		got, want := Check(with, next, DefaultCaps()), Check(rest, next, DefaultCaps())
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d: with %d older approvals: %+v; without them: %+v\napprovals %+v\nrest %+v\nnext %+v",
				i, len(approvals), got, want, approvals, rest, next)
		}
	}
}
