package reconcile

import "time"

// authoritativeAbsence reports whether the evidence makes the charge's absence at the
// processor authoritative, the one case an unknown outcome is resolved failed without a
// person: the list over the send window, read in full, found no PaymentIntent carrying the
// charge id twice, at least AbsenceGap apart, both times after the 24 h rule closed the key
// (so no write under the key can be in flight or still come). It never holds for a charge
// whose PaymentIntent id an answer gave, nor once any check saw a PaymentIntent for it.
// since is the time of the first of the two lists.
func authoritativeAbsence(c Charge, ev Evidence, p Policy) (since time.Time, ok bool) {
	closes := c.KeyClosesAt()
	now := ev.At
	from, to := p.ListWindow(c)
	if c.ProcessorRef != "" || now.Before(closes) || !ev.List.emptyOver(from, to, now) ||
		ev.sawPaymentIntent(c.ID) || sawBefore(c) {
		return time.Time{}, false
	}
	for _, chk := range c.Checks {
		at := chk.Evidence.At
		if !at.Before(closes) && now.Sub(at) >= AbsenceGap && chk.Evidence.List.emptyOver(from, to, at) {
			return at, true
		}
	}
	return time.Time{}, false
}
