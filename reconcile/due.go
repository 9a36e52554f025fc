package reconcile

import "time"

// Due is a charge whose next reconciliation check is due.
type Due struct {
	ChargeID   string
	MerchantID string
	// Account is the processor account the charge was sent to; empty when none is recorded.
	Account string
	// RefKnown reports that an answer gave the charge's PaymentIntent id: its check retrieves
	// it. A charge without one is checked by a sweep of its account.
	RefKnown bool
	// Waited is how long ago its check came due (database clock).
	Waited time.Duration
}

// Swept reports whether the charge is checked by a sweep of its account (its PaymentIntent
// id is unknown) rather than by a check of its own.
func (d Due) Swept() bool { return d.Account != "" && !d.RefKnown }

// SweepsDue returns the processor accounts whose sweep is due, in the order of due (oldest
// due first): those with a due charge whose PaymentIntent id is unknown that has waited gather
// (zero: any), or with batch such charges due. Waiting gathers the charges that come due over
// a stretch of traffic into fewer sweeps, which read their shared windows fewer times. It is
// pure.
func SweepsDue(due []Due, gather time.Duration, batch int) []string {
	var (
		order  []string
		waited = map[string]time.Duration{}
		count  = map[string]int{}
	)
	for _, d := range due {
		if !d.Swept() {
			continue
		}
		if _, ok := count[d.Account]; !ok {
			order = append(order, d.Account)
		}
		count[d.Account]++
		waited[d.Account] = max(waited[d.Account], d.Waited)
	}
	var out []string
	for _, a := range order {
		if waited[a] >= gather || count[a] >= batch {
			out = append(out, a)
		}
	}
	return out
}
