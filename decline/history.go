package decline

import (
	"slices"
	"time"
)

// Outcome is the result of one authorization attempt, as far as it is known.
type Outcome string

// The outcomes of an attempt.
const (
	// Approved ends a run of declines.
	Approved Outcome = "approved"
	// Declined: the issuer declined; the attempt carries its class.
	Declined Outcome = "declined"
	// Pending: the outcome is unknown (a timeout, a lost answer). The rules
	// hold against what is known: a pending attempt sent during a run of
	// declines counts as a reattempt, but it neither opens nor ends a run
	// and counts as no decline until it is resolved. Counting it as a
	// decline would let a processor outage (timeouts, not declines) block
	// cards for 30 days; an attempt allowed while an outcome that would
	// have forbidden it was pending is listed by [Audit] as a violation in
	// hindsight.
	Pending Outcome = "pending"
	// Blocked: the processor refused before the card network saw the
	// attempt (Stripe's outcome type "blocked", network_status
	// "not_sent_to_network"). It is not an authorization: the network caps
	// do not count it, and it neither starts nor ends a run. Its class still
	// applies, and any attempt after a blocked never-class attempt is
	// refused.
	Blocked Outcome = "blocked"
)

// orPending returns o, or [Pending] for a value that is not an outcome: an
// attempt of unknown result may have been a decline.
func (o Outcome) orPending() Outcome {
	switch o {
	case Approved, Declined, Blocked:
		return o
	}
	return Pending
}

// refusal reports whether an attempt with outcome o carries a decline class:
// a decline, or a processor block.
func (o Outcome) refusal() bool {
	o = o.orPending()
	return o == Declined || o == Blocked
}

// Refusal reports whether an attempt with outcome o is a refusal — a decline, or
// a processor block — which puts its card on record: a card whose history
// holds none has only approvals and unknown outcomes, on which [Check] refuses
// nothing and counts nothing.
func (o Outcome) Refusal() bool { return o.refusal() }

// Expiry is a card's expiry month. The zero Expiry is unknown, and an
// unknown expiry matches every other: it proves no change of card data.
type Expiry struct {
	// Year is the four-digit expiry year.
	Year int `json:"year"`
	// Month is the expiry month, 1 to 12.
	Month int `json:"month"`
}

// IsZero reports whether e is unknown.
func (e Expiry) IsZero() bool { return e == Expiry{} }

// sameData reports whether e and f may be the same card data: equal, or
// either unknown.
func (e Expiry) sameData(f Expiry) bool {
	return e.IsZero() || f.IsZero() || e == f
}

// Attempt is one authorization attempt on a card: one processor idempotency
// key, however many times it was sent.
type Attempt struct {
	// Charge is the charge the attempt belongs to; it names the attempt in
	// violations.
	Charge string `json:"charge,omitempty"`
	// Chain is the root charge of the charge's reattempt chain: the charge's
	// own id for an original charge, the first declined charge's id for
	// every reattempt of it.
	Chain string `json:"chain,omitempty"`
	// At is when the attempt was sent, on the database clock.
	At time.Time `json:"at"`
	// Outcome is the attempt's current outcome; an unknown value counts as
	// [Pending].
	Outcome Outcome `json:"outcome"`
	// Class is the decline class of a [Declined] or [Blocked] attempt; an
	// unknown value counts as [Generic].
	Class Class `json:"class,omitempty"`
	// Network is the network the attempt went over; empty is unknown, and
	// an unknown network gets both Visa's and Mastercard's rules.
	Network Network `json:"network,omitempty"`
	// MAC is the Mastercard Merchant Advice Code of a declined attempt.
	MAC MAC `json:"mac,omitempty"`
	// Expiry is the expiry of the payment method charged; zero if unknown.
	Expiry Expiry `json:"expiry,omitzero"`
	// PaymentMethod is the processor's payment method id charged (pm_...); empty if
	// unknown, and then a [HoldPaymentMethod] decline reads as the expiry rule.
	PaymentMethod string `json:"payment_method,omitempty"`
	// Currency is the charge's ISO 4217 currency; empty if unknown, and then a
	// [HoldCurrency] decline refuses every currency, as a never-class decline does.
	Currency string `json:"currency,omitempty"`
	// Hold is the hold of a [Declined] or [Blocked] attempt ([Classification.Hold]); an
	// unknown value counts as [HoldNone].
	Hold Hold `json:"hold,omitempty"`
	// CapReached marks Stripe's own refusal
	// previously_declined_do_not_retry (see [Classification.CapReached]).
	CapReached bool `json:"cap_reached,omitempty"`
	// KnownAt is when the gateway learned the attempt's outcome: later than
	// At when it was pending first (a timeout, then reconciliation). Zero
	// means when it was sent. [Audit] uses it to tell a rule broken against
	// what the gateway knew from one broken only in hindsight.
	KnownAt time.Time `json:"known_at,omitzero"`
}

// knownAt is when the gateway learned a's outcome.
func (a Attempt) knownAt() time.Time {
	if a.KnownAt.IsZero() {
		return a.At
	}
	return a.KnownAt
}

// History is the attempt history of one card (one card fingerprint) at one
// processor account. Functions that take a History sort a copy by time, so
// its order does not matter; attempts with equal times keep their order.
type History []Attempt

// sorted returns a copy of h in time order.
func (h History) sorted() History {
	s := slices.Clone(h)
	slices.SortStableFunc(s, func(a, b Attempt) int { return a.At.Compare(b.At) })
	return s
}
