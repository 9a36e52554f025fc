package decline

import (
	"cmp"
	"slices"
	"time"
)

// Checkpoint is a point in a card's history, in the order [Check] reads it: by time, then
// by charge. The zero Checkpoint is before every attempt.
type Checkpoint struct {
	At     time.Time `json:"at"`
	Charge string    `json:"charge"`
}

// Before reports whether attempt a comes after c: a is not yet part of a history folded up
// to c.
func (c Checkpoint) Before(a Attempt) bool { return compareAt(c.At, c.Charge, a.At, a.Charge) < 0 }

// Of returns the checkpoint at attempt a.
func Of(a Attempt) Checkpoint { return Checkpoint{At: a.At, Charge: a.Charge} }

func compareAt(t1 time.Time, c1 string, t2 time.Time, c2 string) int {
	if c := t1.Compare(t2); c != 0 {
		return c
	}
	return cmp.Compare(c1, c2)
}

// Ordered returns a copy of h in the order of checkpoints (time, then charge), without a
// second attempt of the same charge (the first one given is kept).
func Ordered(h History) History {
	seen := make(map[string]bool, len(h))
	out := make(History, 0, len(h))
	for _, a := range h {
		if a.Charge != "" {
			if seen[a.Charge] {
				continue
			}
			seen[a.Charge] = true
		}
		out = append(out, a)
	}
	slices.SortStableFunc(out, func(a, b Attempt) int { return compareAt(a.At, a.Charge, b.At, b.Charge) })
	return out
}

// Settled reports whether attempt a's outcome can no longer change by itself at now: it is
// known, or it has been unknown for longer than an attempt stays in flight ([InFlight]).
// Only settled attempts are folded into a [Compact] history.
func Settled(a Attempt, now time.Time) bool {
	return a.Outcome.orPending() != Pending || now.Sub(a.At) >= InFlight
}

// compactWindow is the longest window any rule looks back over for an attempt that is not
// a never-class or fix-data refusal: the networks' 30 days, and a processor's refusal for
// excessive reattempts.
const compactWindow = 30 * day

// Compact returns the attempts of h that [Check] can still need at now or later: for any
// attempts r that come after all of h and any next asked at now or later, Check over
// Compact(h, now) with r (and the attempts of next.Chain in h, which Compact may leave out:
// read them on their own) decides as Check over h with r. Every attempt of h must be
// [Settled] at now. The result is in time order.
//
// It keeps the refusals the rules keep forever or for a while (never-class, fix-data, the
// advice delay that ends last, a processor's cap refusal of the last 30 days or its decline
// rate limit of the last 24 hours) and the first
// approval after each of them that clears it; on networks with caps, every refusal and
// every attempt inside a run of declines of the last 30 days (what the caps count); and the
// run boundaries (the decline that opens a run, the approval that ends it) that tell whether
// the card was in a run before each attempt kept and at the end. A card's approvals outside
// runs of declines — the bulk of a good card's history — are left out.
func Compact(h History, now time.Time) History {
	hist := Ordered(h)
	n := len(hist)
	keep := make([]bool, n)
	windowFrom := now.Add(-compactWindow)
	// boundaryBefore[i]: the last run boundary before attempt i (-1: none).
	boundaryBefore := make([]int, n)
	var (
		inRun    bool
		boundary = -1
		// open refusals that a later approval may clear: the index of the first clearing
		// approval of each, -1 while none came.
		fixOpen  []int
		capOpen  []int
		clearing = make(map[int]int)
		macLast  = -1 // the refusal whose advice delay ends last
		macUntil time.Time
	)
	for i, a := range hist {
		boundaryBefore[i] = boundary
		out := a.Outcome.orPending()
		caps := a.Network.visaRules() || a.Network.mastercardRules()
		inWindow := a.At.After(windowFrom)
		if out.refusal() {
			switch a.Class.orGeneric() {
			case Never:
				keep[i] = true
			case FixData:
				keep[i] = true
				fixOpen = append(fixOpen, i)
			}
			if heldBy(a) == HoldRateLimit && a.At.Add(processorRateLimitFor).After(now) {
				keep[i] = true
			}
			// The latest end of an advice delay moves a chain's next slot even once it has
			// passed (it is the earliest the chain may go on): the refusal it comes from stays.
			if d := MACDelay(a.MAC); d > 0 && (macLast < 0 || a.At.Add(d).After(macUntil)) {
				macLast, macUntil = i, a.At.Add(d)
			}
			if out == Blocked && a.CapReached && a.At.Add(processorCapRefusalFor).After(now) {
				keep[i] = true
				capOpen = append(capOpen, i)
			}
			if caps && inWindow {
				keep[i] = true
			}
		}
		if out == Blocked {
			continue // no authorization: the run of declines is as it was
		}
		if inRun && inWindow && caps {
			keep[i] = true // a reattempt the caps count, or the approval that ends the run
		}
		switch out {
		case Approved:
			fixOpen = slices.DeleteFunc(fixOpen, func(j int) bool {
				f := hist[j]
				if (fixDecline{hold: heldBy(f), paymentMethod: f.PaymentMethod, expiry: f.Expiry}).refuses(a.PaymentMethod, a.Expiry) {
					clearing[j] = i
					return true
				}
				return false
			})
			for _, j := range capOpen {
				clearing[j] = i
			}
			capOpen = capOpen[:0]
			if inRun {
				boundary = i
			}
			inRun = false
		case Declined:
			if !inRun {
				boundary = i
			}
			inRun = true
		}
	}
	if macLast >= 0 {
		keep[macLast] = true
	}
	// A refusal kept whose effect an approval ended needs that approval too.
	for j, i := range clearing {
		if keep[j] {
			keep[i] = true
		}
	}
	// Whether the card was in a run before each attempt kept, and at the end, is told by the
	// last run boundary before it: the attempts between the two leave it as it was.
	for i := range n {
		if keep[i] && boundaryBefore[i] >= 0 {
			keep[boundaryBefore[i]] = true
		}
	}
	if boundary >= 0 {
		keep[boundary] = true
	}
	out := make(History, 0, n)
	for i, a := range hist {
		if keep[i] {
			out = append(out, a)
		}
	}
	return out
}
