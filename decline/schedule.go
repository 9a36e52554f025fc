package decline

import "time"

// day is 24 hours of elapsed time: schedules and windows count instants,
// not calendar days, so a change of daylight saving time moves nothing.
const day = 24 * time.Hour

// schedules are the reattempt offsets of each retryable class, counted from
// the first decline of a chain.
var schedules = map[Class][]time.Duration{
	Funds:           {1 * day, 3 * day, 5 * day, 7 * day, 10 * day, 14 * day},
	IssuerTransient: {time.Hour, 1 * day, 3 * day, 7 * day},
	Generic:         {2 * day, 5 * day, 9 * day, 14 * day},
}

// Schedule returns the reattempt offsets of class c, counted from the first
// decline of a chain: +1, +3, +5, +7, +10 and +14 days for [Funds]; +1 hour
// and +1, +3, +7 days for [IssuerTransient]; +2, +5, +9 and +14 days for
// [Generic]. It returns nil for [Never], [FixData] and [Authenticate], which
// have no schedule: never reattempt, reattempt only with new card data, or
// only with the cardholder, in a charge of their own. The slice is a copy.
func Schedule(c Class) []time.Duration {
	s := schedules[c]
	if s == nil {
		return nil
	}
	return append([]time.Duration(nil), s...)
}

// NextSlot returns the earliest time the next reattempt of a chain may be
// sent, and false when there is none: class c has no schedule, or its slots
// are used up.
//
// Slots are firstDeclineAt plus the offsets of [Schedule]. The first
// attemptsSoFar slots are spent, one per reattempt already sent in the
// chain. A slot earlier than notBefore is skipped rather than delayed, so
// that waiting out a Mastercard "retry after" advice does not leave a queue
// of overdue slots to fire at once: pass the end of the advice's delay (see
// [MACDelay]), or the zero time when there is none. [Check] also passes the
// instant just after the chain's last attempt, so a late reattempt is not
// followed by another at once.
func NextSlot(c Class, firstDeclineAt time.Time, attemptsSoFar int, notBefore time.Time) (time.Time, bool) {
	offsets := schedules[c]
	if attemptsSoFar < 0 {
		attemptsSoFar = 0
	}
	for i := attemptsSoFar; i < len(offsets); i++ {
		slot := firstDeclineAt.Add(offsets[i])
		if !slot.Before(notBefore) {
			return slot, true
		}
	}
	return time.Time{}, false
}
