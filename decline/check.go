package decline

import (
	"slices"
	"time"
)

// Reason is why one more attempt is refused. Its string forms are the
// contract's refusal reasons.
type Reason string

// The refusal reasons.
const (
	// ReasonNeverReattempt: the card had a never-class decline at this
	// processor account.
	ReasonNeverReattempt Reason = "never_reattempt"
	// ReasonNetworkCapReached: one more attempt could break a network cap,
	// or the processor refused for excessive reattempts.
	ReasonNetworkCapReached Reason = "network_cap_reached"
	// ReasonTooEarly: before a Mastercard advice delay ended, or before the
	// schedule's next slot, while no network cap is reached.
	ReasonTooEarly Reason = "too_early"
	// ReasonFixDataFirst: the decline asks for new card data: another
	// fingerprint or another expiry clears it, or, for data the shopper typed
	// ([HoldPaymentMethod]), another payment method; after Stripe's
	// pin_try_exceeded ([HoldCard]) only another card.
	ReasonFixDataFirst Reason = "fix_data_first"
	// ReasonScheduleExhausted: every slot of the chain's schedule is spent,
	// or the chain's last decline has no schedule because it asks for the
	// cardholder's authentication ([Authenticate]).
	ReasonScheduleExhausted Reason = "schedule_exhausted"
	// ReasonPossibleDuplicate: a decline of the chain says an identical
	// transaction went through very recently ([HoldNoReattempt]): the order
	// may be paid already, and the chain is not reattempted.
	ReasonPossibleDuplicate Reason = "possible_duplicate"
)

// NoCap is the RemainingInWindow of a card no network cap applies to
// (American Express, Discover).
const NoCap = -1

// Next is the attempt [Check] is asked about.
type Next struct {
	// At is now, on the database clock.
	At time.Time
	// Network is the card's network, known from the payment method before
	// the attempt; empty is unknown, and gets every network's caps.
	Network Network
	// Expiry is the expiry of the payment method to be charged; zero if
	// unknown, which never clears a fix-data decline.
	Expiry Expiry
	// PaymentMethod is the processor's payment method id to be charged
	// (pm_...); empty if unknown, and then a [HoldPaymentMethod] decline is
	// cleared only as any fix-data decline is (another fingerprint or expiry).
	PaymentMethod string
	// Currency is the charge's ISO 4217 currency; empty if unknown, which a
	// [HoldCurrency] decline refuses as it refuses its own currency.
	Currency string
	// Chain is the root charge id when the attempt is a reattempt of a
	// declined charge (manual or automatic); the class schedule then
	// applies. It is empty for a new charge, which only the network rules
	// and the fix-data rule restrict. Check does not verify that the chain
	// ended in a decline: reattempt only declined charges.
	Chain string
	// ChainHistory, when not nil, holds the attempts of Chain the schedule
	// is decided on, in place of those of the history: a caller deciding on
	// a [Compact] history reads the chain's attempts on their own.
	ChainHistory History
}

// Verdict is [Check]'s answer. Its JSON form is the contract's reattempt
// block: allowed, not_before, reason, remaining_in_window.
type Verdict struct {
	// Allowed reports whether the attempt may be sent now.
	Allowed bool `json:"allowed"`
	// Reason is why it may not; empty when allowed.
	Reason Reason `json:"reason,omitempty"`
	// Rule is the rule behind Reason, for the decision log.
	Rule Rule `json:"-"`
	// NotBefore is when the refusal Reason names lifts if nothing else
	// happens first: for too_early, the earliest time the attempt would be
	// allowed; for network_cap_reached, when the cap's window frees (a
	// schedule slot or a Mastercard advice delay may still refuse the
	// attempt then, as too_early). Zero when allowed, and when waiting does
	// not help (never, fix data, schedule exhausted).
	NotBefore time.Time `json:"not_before,omitzero"`
	// RemainingInWindow is how many more attempts the card's tightest
	// network window admits now, counting the one asked about: at least 1
	// when allowed, 0 after a never-class decline, [NoCap] when no network
	// cap applies.
	RemainingInWindow int `json:"remaining_in_window"`
	// Counters are the counts the caps were checked against, for the
	// decision log.
	Counters Counters `json:"-"`
	// Reattempt reports that the attempt asked about is a reattempt: the
	// card is in a run of declines, or the attempt reattempts a chain. Its
	// decision is one the audit report lists.
	Reattempt bool `json:"-"`
}

// Check decides whether one more attempt on a card may be sent at next.At,
// given the card's history at this processor account. It is pure: the store
// calls it inside the transaction that records the attempt, under a lock on
// the card's row, so the last slot of a window goes to one attempt only.
//
// The rules, in the order they refuse:
//
//   - never_reattempt: any [Never] decline (or block) in the history, ever;
//     one whose hold is [HoldCurrency] only when its currency may be
//     next.Currency (equal, or either unknown).
//   - fix_data_first: a [FixData] decline (or block) that may have refused
//     the data of next, not followed by an approval with data it would
//     refuse: with [HoldPaymentMethod], the same payment method when both are
//     known; with [HoldCard], any attempt on the card; otherwise an expiry
//     that may equal next.Expiry (equal, or either unknown).
//   - possible_duplicate: next.Chain has a decline whose hold is
//     [HoldNoReattempt].
//   - schedule_exhausted: next.Chain's schedule has no slot left, or its
//     last decline asks for the cardholder's authentication ([Authenticate]),
//     which no reattempt of the chain can give.
//   - network_cap_reached: on Visa (or an unknown network), when the card is
//     in a run of declines and the last 30 days already hold the cap's
//     number of reattempts; on Mastercard (or unknown), when the last 24
//     hours or 30 days already hold the cap's number of declines (attempts
//     still in flight on a card in a run of declines, see [InFlight],
//     included), since the next attempt may be one more; or within 30 days of a processor refusal
//     for excessive reattempts with no approval since; or within 24 hours of a processor
//     refusal for too many declines ([HoldRateLimit]), on any network.
//   - too_early: before the end of a Mastercard advice delay on any
//     decline, or before next.Chain's next schedule slot, with no cap in
//     force.
//
// When several time-bound refusals apply, a cap in force is the reason on
// every network, with the time its window frees (of the caps in force, the
// one that frees last) as NotBefore: a schedule slot or an advice delay that
// ends later then refuses the attempt as too_early, with its own NotBefore.
// too_early is reported only when no cap is in force, with the time the last
// of the schedule and advice refusals lifts.
func Check(h History, next Next, caps Caps) Verdict {
	caps = caps.withDefaults()
	hist := h.sorted()
	chainHist := hist
	if next.ChainHistory != nil {
		chainHist = next.ChainHistory.sorted()
	}
	return tallyOf(hist, next).rules(chainStateOf(chainHist, next.Chain), next, caps)
}

// tally is what the rules need of a card's history: what refuses for good, the open
// fix-data declines, the end of the time-bound refusals, and the attempts each network cap
// counts in its window.
type tally struct {
	never     bool
	fixOpen   []fixDecline // fix-data declines no approval has cleared
	rateUntil time.Time    // end of the processor's refusal for too many declines
	capUntil  time.Time    // end of the processor's refusal for excessive reattempts
	macUntil  time.Time    // end of the last Mastercard advice delay
	inRun     bool         // the last known authorization outcome was a decline
	visa      []time.Time  // Visa reattempts in the last 30 days
	mc24      []time.Time  // Mastercard declines in the last 24 hours
	mc30      []time.Time  // Mastercard declines in the last 30 days
}

// tallyOf tallies hist (in time order) for the attempt next.
func tallyOf(hist History, next Next) tally {
	var t tally
	now := next.At
	for _, a := range hist {
		out := a.Outcome.orPending()
		if out.refusal() {
			t.refusal(a, next)
		}
		if out == Blocked {
			if a.CapReached {
				t.capUntil = later(t.capUntil, a.At.Add(processorCapRefusalFor))
			}
			continue
		}
		if t.inRun && a.Network.visaRules() && a.At.After(now.Add(-visaWindow)) {
			t.visa = append(t.visa, a.At)
		}
		// An attempt still in flight on a card in a run of declines may be one more.
		if (out == Declined || out == Pending && t.inRun && now.Sub(a.At) < InFlight) && a.Network.mastercardRules() {
			if a.At.After(now.Add(-mastercardShortWindow)) {
				t.mc24 = append(t.mc24, a.At)
			}
			if a.At.After(now.Add(-mastercardLongWindow)) {
				t.mc30 = append(t.mc30, a.At)
			}
		}
		switch out {
		case Approved:
			t.inRun = false
			// An approval proves only its own card data: a fix-data decline
			// of other data (another expiry, another payment method) stays open.
			t.fixOpen = slices.DeleteFunc(t.fixOpen, func(f fixDecline) bool { return f.refuses(a.PaymentMethod, a.Expiry) })
			t.capUntil = time.Time{}
		case Declined:
			t.inRun = true
		}
		// A pending attempt neither opens nor ends a run: the rules hold
		// against what is known (see [Pending]).
	}
	return t
}

// refusal tallies the refusal (decline or block) a, for the attempt next.
func (t *tally) refusal(a Attempt, next Next) {
	hold := heldBy(a)
	switch a.Class.orGeneric() {
	case Never:
		if hold != HoldCurrency || mayShareCurrency(a.Currency, next.Currency) {
			t.never = true
		}
	case FixData:
		t.fixOpen = append(t.fixOpen, fixDecline{hold: hold, paymentMethod: a.PaymentMethod, expiry: a.Expiry})
	}
	if d := MACDelay(a.MAC); d > 0 {
		t.macUntil = later(t.macUntil, a.At.Add(d))
	}
	if hold == HoldRateLimit {
		t.rateUntil = later(t.rateUntil, a.At.Add(processorRateLimitFor))
	}
}

// rules applies the rules, in the order they refuse, to the tally t and the state ch of
// next's chain.
func (t tally) rules(ch chainState, next Next, caps Caps) Verdict {
	v := Verdict{
		Counters: Counters{
			VisaReattempts30d:     len(t.visa),
			MastercardDeclines24h: len(t.mc24),
			MastercardDeclines30d: len(t.mc30),
		},
		RemainingInWindow: t.remaining(next.Network, caps),
		Reattempt:         t.inRun || next.Chain != "",
	}
	if r, rule, ok := t.forGood(ch, next); ok {
		if r == ReasonNeverReattempt {
			v.RemainingInWindow = 0
		}
		v.Reason, v.Rule = r, rule
		return v
	}
	waits, ok := t.waits(ch, next.Network, caps)
	if !ok {
		v.Reason, v.Rule = ReasonScheduleExhausted, RuleSchedule
		return v
	}
	if w, ok := refusingWait(waits, next.At); ok {
		v.Reason, v.Rule, v.NotBefore = w.reason, w.rule, w.until
		return v
	}
	v.Allowed = true
	return v
}

// remaining is how many more attempts the tightest cap of network admits now.
func (t tally) remaining(network Network, caps Caps) int {
	r := NoCap
	if network.visaRules() {
		r = remaining(r, caps.VisaReattempts30d-len(t.visa))
	}
	if network.mastercardRules() {
		r = remaining(r, caps.MastercardDeclines24h-len(t.mc24))
		r = remaining(r, caps.MastercardDeclines30d-len(t.mc30))
	}
	return r
}

// forGood returns the refusal that waiting does not lift, if any: a never-class decline, an
// open fix-data decline of next's data, a chain that may have paid already, or one whose last
// decline asks for the cardholder's authentication.
func (t tally) forGood(ch chainState, next Next) (Reason, Rule, bool) {
	if t.never {
		return ReasonNeverReattempt, RuleAfterNever, true
	}
	for _, f := range t.fixOpen {
		if f.refuses(next.PaymentMethod, next.Expiry) {
			if f.hold == HoldCard {
				return ReasonFixDataFirst, RuleAnotherCard, true
			}
			return ReasonFixDataFirst, RuleFixData, true
		}
	}
	if ch.dup {
		// The chain's decline may be a second payment of the order: a person looks
		// first, and no reattempt of the chain goes out meanwhile.
		return ReasonPossibleDuplicate, RulePossibleDuplicate, true
	}
	if ch.seen && ch.cls == Authenticate {
		// Only the cardholder can authenticate, in a charge of their own: a
		// reattempt of the chain, made without them, has no slot.
		return ReasonScheduleExhausted, RuleSchedule, true
	}
	return "", "", false
}

// waits returns the time-bound refusals of an attempt on network: the chain's next slot, the
// network caps' windows, the processor's refusals and the advice delays. ok is false when the
// chain's schedule has no slot left.
func (t tally) waits(ch chainState, network Network, caps Caps) (waits []wait, ok bool) {
	if ch.seen && ch.cls.Retryable() {
		nb := later(t.macUntil, ch.last.Add(time.Nanosecond))
		slot, ok := NextSlot(ch.cls, ch.from, ch.n, nb)
		if !ok {
			return nil, false
		}
		waits = append(waits, wait{ReasonTooEarly, RuleSchedule, slot})
	}
	if network.visaRules() && t.inRun {
		waits = capWait(waits, t.visa, caps.VisaReattempts30d, RuleVisa30d, visaWindow)
	}
	if network.mastercardRules() {
		waits = capWait(waits, t.mc24, caps.MastercardDeclines24h, RuleMastercard24h, mastercardShortWindow)
		waits = capWait(waits, t.mc30, caps.MastercardDeclines30d, RuleMastercard30d, mastercardLongWindow)
	}
	return append(waits,
		wait{ReasonNetworkCapReached, RuleProcessorCap, t.capUntil},
		wait{ReasonNetworkCapReached, RuleProcessorRateLimit, t.rateUntil},
		wait{ReasonTooEarly, RuleBeforeMACDelay, t.macUntil},
	), true
}

// capWait adds to waits the refusal of a cap of c attempts in window, when the attempts at
// (in time order) already reach it: until the window frees one.
func capWait(waits []wait, at []time.Time, c int, rule Rule, window time.Duration) []wait {
	if n := len(at); n >= c {
		waits = append(waits, wait{ReasonNetworkCapReached, rule, at[n-c].Add(window)})
	}
	return waits
}

// refusingWait returns the refusal among waits that holds at now: a cap in force is the
// reason whatever else refuses, until its window frees (the cap's that frees last);
// otherwise the refusal that lifts last. ok is false when none holds.
func refusingWait(waits []wait, now time.Time) (wait, bool) {
	var last, capLast *wait
	for i := range waits {
		w := &waits[i]
		if !w.until.After(now) {
			continue
		}
		if last == nil || w.until.After(last.until) {
			last = w
		}
		if w.reason == ReasonNetworkCapReached && (capLast == nil || w.until.After(capLast.until)) {
			capLast = w
		}
	}
	switch {
	case capLast != nil:
		return *capLast, true
	case last != nil:
		return *last, true
	}
	return wait{}, false
}

// chainState is what the schedule of a chain needs of the history: whether the chain has a
// refusal, its first refusal's time, its last attempt's time, how many attempts came after
// its first refusal, the class of its last refusal, and whether a refusal of it may be a
// second payment ([HoldNoReattempt]).
type chainState struct {
	seen       bool
	from, last time.Time
	n          int
	cls        Class
	dup        bool
}

// chainStateOf returns the state of chain in hist (in time order); the zero state for no
// chain.
func chainStateOf(hist History, chain string) chainState {
	var c chainState
	if chain == "" {
		return c
	}
	for _, a := range hist {
		if a.Chain != chain {
			continue
		}
		out := a.Outcome.orPending()
		if out.refusal() && heldBy(a) == HoldNoReattempt {
			c.dup = true
		}
		switch {
		case c.seen:
			c.n++
			c.last = later(c.last, a.At)
			if out.refusal() {
				c.cls = a.Class.orGeneric()
			}
		case out.refusal():
			c.seen = true
			c.from, c.last, c.cls = a.At, a.At, a.Class.orGeneric()
		}
	}
	return c
}

// heldBy is the hold of attempt a as Check reads it: its own, when that hold belongs to
// its class, and else [HoldNone].
func heldBy(a Attempt) Hold {
	h := ParseHold(string(a.Hold))
	if !h.fits(a.Class.orGeneric()) {
		return HoldNone
	}
	return h
}

// mayShareCurrency reports whether two currencies may be the same one: equal, or either
// unknown.
func mayShareCurrency(a, b string) bool {
	a, b = normalizeCurrency(a), normalizeCurrency(b)
	return a == "" || b == "" || a == b
}

// fixDecline is a fix-data decline no approval has cleared yet: its hold and the card data
// it refused.
type fixDecline struct {
	hold          Hold
	paymentMethod string
	expiry        Expiry
}

// refuses reports whether f refuses an attempt with payment method pm and expiry exp, or,
// for an approval, whether the approval proves the data f refused: any attempt on the card
// after [HoldCard]; after [HoldPaymentMethod] the same payment method when both ids are
// known; else an expiry that may be the same.
func (f fixDecline) refuses(pm string, exp Expiry) bool {
	switch f.hold {
	case HoldCard:
		return true
	case HoldPaymentMethod:
		if f.paymentMethod != "" && pm != "" {
			return f.paymentMethod == pm
		}
	}
	return f.expiry.sameData(exp)
}

// wait is a refusal that lifts at until.
type wait struct {
	reason Reason
	rule   Rule
	until  time.Time
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// remaining folds one cap's headroom n into r, the tightest so far ([NoCap]
// for none yet); headroom below zero is zero.
func remaining(r, n int) int {
	n = max(n, 0)
	if r == NoCap || n < r {
		return n
	}
	return r
}
