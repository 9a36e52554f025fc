package decline

import (
	"strings"
	"time"
)

// Violation is one attempt that broke a network rule.
type Violation struct {
	// Charge is the charge of the attempt.
	Charge string `json:"charge,omitempty"`
	// At is when the attempt was sent.
	At time.Time `json:"at"`
	// Rule is the rule it broke: [RuleAfterNever], [RuleBeforeMACDelay],
	// [RuleVisa30d], [RuleMastercard24h] or [RuleMastercard30d].
	Rule Rule `json:"rule"`
	// Count is the count in the window that ends at the attempt, the
	// attempt included, for the cap rules; 0 for the others.
	Count int `json:"count,omitempty"`
	// Limit is the cap that Count exceeds; 0 for the rules without one.
	Limit int `json:"limit,omitempty"`
}

// Findings are the counts and violations [Audit] finds in a card's history.
type Findings struct {
	// Attempts counts every attempt, processor blocks included.
	Attempts int `json:"attempts"`
	// Declines counts declined attempts (not pending ones, not blocks).
	Declines int `json:"declines"`
	// DeclinesByClass counts declined attempts per class; an attempt
	// without a usable class counts as [Generic].
	DeclinesByClass map[Class]int `json:"declines_by_class"`
	// Reattempts counts authorizations sent after a decline with no
	// approval between, on any network (a pending attempt neither opens nor
	// ends a run; see [Pending]).
	Reattempts int `json:"reattempts"`
	// MaxVisaReattempts30d is the largest number of reattempts on Visa (or
	// an unknown network) in any rolling 30 days.
	MaxVisaReattempts30d int `json:"max_visa_reattempts_30d"`
	// MaxMastercardDeclines24h is the largest number of declines on
	// Mastercard (or an unknown network) in any rolling 24 hours.
	MaxMastercardDeclines24h int `json:"max_mastercard_declines_24h"`
	// MaxMastercardDeclines30d is the same over any rolling 30 days.
	MaxMastercardDeclines30d int `json:"max_mastercard_declines_30d"`
	// Violations lists each attempt that broke a rule, once per rule, in
	// time order, against what the gateway knew when it sent the attempt.
	Violations []Violation `json:"violations"`
	// InHindsight lists each attempt that broke a rule only in hindsight:
	// sent while an earlier attempt whose outcome forbids it (a never-class
	// or advice decline, or a decline that made the cap's count) was still
	// unknown to the gateway (pending; see [Attempt.KnownAt]). Enforcement
	// could not have refused it; the network may still count it.
	InHindsight []Violation `json:"in_hindsight"`
}

// Audit recounts a card's history at one processor account from scratch and
// lists the attempts that broke a network rule:
//
//   - after_never: any attempt after a never-class decline or block (after one
//     that refused only its currency, [HoldCurrency], an attempt in a currency
//     that may be the same: equal, or either unknown);
//   - before_mac_delay: any attempt before a Mastercard advice delay ended;
//
// (both counted as violations when the forbidding outcome was known when the
// attempt was sent, and listed in InHindsight when it was found only later);
//   - visa_30d: each reattempt on Visa (or an unknown network) that makes
//     more than caps.VisaReattempts30d in the 30 days ending at it;
//   - mastercard_24h, mastercard_30d: each decline on Mastercard (or an
//     unknown network) that makes more than the cap in the 24 hours or 30
//     days ending at it;
//
// (a cap broken on the outcomes as they are now is a violation when it was
// broken on the outcomes known when the attempt was sent too, and listed in
// InHindsight otherwise).
//
// Windows are half-open, (t−w, t]. The reattempt report runs Audit over the
// stored history; it shares no counting code with [Check], so a fault in
// enforcement shows up here instead of hiding twice. Histories are those of
// one card, so the quadratic recount is cheap.
func Audit(h History, caps Caps) Findings {
	au := newAudit(h, caps)
	for i := range au.hist {
		au.earlierRefusals(i)
		if au.isVisa(i) {
			au.visaCap(i)
		}
		if au.isMCDecline(i) {
			au.mastercardCaps(i)
		}
	}
	return au.f
}

// audit is one run of Audit: the history in time order, which of its attempts are
// reattempts, and the findings so far.
type audit struct {
	hist      History
	caps      Caps
	reattempt []bool
	f         Findings
}

// newAudit counts the attempts, declines and reattempts of h.
func newAudit(h History, caps Caps) *audit {
	hist := h.sorted()
	au := &audit{hist: hist, caps: caps.withDefaults(), f: Findings{
		Attempts:        len(hist),
		DeclinesByClass: map[Class]int{},
		Violations:      []Violation{},
		InHindsight:     []Violation{},
	}}
	// Which attempts are reattempts: an authorization while a run of declines is open.
	// Blocks are not authorizations.
	au.reattempt = reattempts(hist, func(j int) Outcome { return hist[j].Outcome.orPending() })
	for i, a := range hist {
		if a.Outcome.orPending() == Declined {
			au.f.Declines++
			au.f.DeclinesByClass[a.Class.orGeneric()]++
		}
		if au.reattempt[i] {
			au.f.Reattempts++
		}
	}
	return au
}

func (au *audit) isVisa(i int) bool { return au.reattempt[i] && au.hist[i].Network.visaRules() }

func (au *audit) isMCDecline(i int) bool {
	return au.hist[i].Outcome.orPending() == Declined && au.hist[i].Network.mastercardRules()
}

// inWindow counts the attempts j <= i that match and fall in the window of length w that
// ends at attempt i.
func (au *audit) inWindow(i int, w time.Duration, match func(int) bool) int {
	n := 0
	from := au.hist[i].At.Add(-w)
	for j := 0; j <= i; j++ {
		if match(j) && au.hist[j].At.After(from) {
			n++
		}
	}
	return n
}

// flag records a violation by attempt i: known when it was sent, or only in hindsight.
func (au *audit) flag(i int, rule Rule, count, limit int, hindsight bool) {
	a := au.hist[i]
	v := Violation{Charge: a.Charge, At: a.At, Rule: rule, Count: count, Limit: limit}
	if hindsight {
		au.f.InHindsight = append(au.f.InHindsight, v)
		return
	}
	au.f.Violations = append(au.f.Violations, v)
}

// earlierRefusals checks attempt i against the rules that follow from one earlier refusal
// (never_reattempt, before_mac_delay): broken against what was known when some forbidding
// refusal was known by the attempt's time, in hindsight when all of them were found later.
func (au *audit) earlierRefusals(i int) {
	a := au.hist[i]
	var never, mac knowledge
	for _, p := range au.hist[:i] {
		if o := p.Outcome.orPending(); o != Declined && o != Blocked {
			continue
		}
		known := !p.knownAt().After(a.At)
		if p.Class.orGeneric() == Never && !otherCurrency(p, a) {
			never.add(known)
		}
		if d := MACDelay(p.MAC); d > 0 && a.At.Before(p.At.Add(d)) {
			mac.add(known)
		}
	}
	for _, r := range []struct {
		rule Rule
		k    knowledge
	}{{RuleAfterNever, never}, {RuleBeforeMACDelay, mac}} {
		if r.k.known || r.k.late {
			au.flag(i, r.rule, 0, 0, !r.k.known)
		}
	}
}

// capBroken records a cap of limit broken by attempt i, n attempts in its window of w on the
// outcomes as they are now: against what the gateway knew only if the outcomes known at the
// attempt's time (known(i)) break it too, else in hindsight.
func (au *audit) capBroken(i int, rule Rule, w time.Duration, n, limit int, known func(i int) func(int) bool) {
	if n <= limit {
		return
	}
	if k := au.inWindow(i, w, known(i)); k > limit {
		au.flag(i, rule, k, limit, false)
		return
	}
	au.flag(i, rule, n, limit, true)
}

// visaCap checks the Visa reattempt i against the 30-day cap.
func (au *audit) visaCap(i int) {
	n := au.inWindow(i, visaWindow, au.isVisa)
	au.f.MaxVisaReattempts30d = max(au.f.MaxVisaReattempts30d, n)
	au.capBroken(i, RuleVisa30d, visaWindow, n, au.caps.VisaReattempts30d, func(i int) func(int) bool {
		known := reattemptsKnownAt(au.hist, au.hist[i].At)
		return func(j int) bool { return known[j] && au.hist[j].Network.visaRules() }
	})
}

// mastercardCaps checks the Mastercard decline i against the 24-hour and 30-day caps.
func (au *audit) mastercardCaps(i int) {
	n := au.inWindow(i, mastercardShortWindow, au.isMCDecline)
	au.f.MaxMastercardDeclines24h = max(au.f.MaxMastercardDeclines24h, n)
	au.capBroken(i, RuleMastercard24h, mastercardShortWindow, n, au.caps.MastercardDeclines24h, au.knownMC)
	n = au.inWindow(i, mastercardLongWindow, au.isMCDecline)
	au.f.MaxMastercardDeclines30d = max(au.f.MaxMastercardDeclines30d, n)
	au.capBroken(i, RuleMastercard30d, mastercardLongWindow, n, au.caps.MastercardDeclines30d, au.knownMC)
}

// knownMC is what enforcement counted against the Mastercard caps when attempt i was sent:
// the declines known then, the attempts still in flight then on a card in a run of declines
// (possible declines), and the attempt itself.
func (au *audit) knownMC(i int) func(int) bool {
	hist := au.hist
	open := reattemptsKnownAt(hist, hist[i].At) // a run was open before j, as known then
	return func(j int) bool {
		if j == i || !hist[j].knownAt().After(hist[i].At) {
			return au.isMCDecline(j)
		}
		return open[j] && hist[j].Network.mastercardRules() && hist[i].At.Sub(hist[j].At) < InFlight
	}
}

// reattemptsKnownAt marks the attempts of hist (in time order) that were reattempts on the
// outcomes the gateway knew at t: an outcome learned after t was still pending then. It is
// computed only for a cap found broken, so the report stays quadratic.
func reattemptsKnownAt(hist History, t time.Time) []bool {
	return reattempts(hist, func(j int) Outcome {
		if hist[j].knownAt().After(t) {
			return Pending
		}
		return hist[j].Outcome.orPending()
	})
}

// reattempts marks the attempts of hist (in time order) sent while a run of declines was
// open, given each attempt's outcome: a decline opens a run, an approval ends it, a pending
// attempt does neither, and a block is no authorization.
func reattempts(hist History, outcome func(j int) Outcome) []bool {
	out := make([]bool, len(hist))
	open := false
	for j := range hist {
		switch outcome(j) {
		case Approved:
			out[j], open = open, false
		case Declined:
			out[j], open = open, true
		case Pending:
			out[j] = open
		}
	}
	return out
}

// otherCurrency reports whether attempt a is certainly in another currency than the
// never-class refusal p, when p refused only its own currency: both currencies known and
// different. Every other never-class refusal covers every attempt after it.
func otherCurrency(p, a Attempt) bool {
	if ParseHold(string(p.Hold)) != HoldCurrency {
		return false
	}
	pc, ac := strings.ToLower(strings.TrimSpace(p.Currency)), strings.ToLower(strings.TrimSpace(a.Currency))
	return pc != "" && ac != "" && pc != ac
}

// knowledge is whether some earlier refusal forbidding an attempt was known when it was sent
// (known), or only found later (late).
type knowledge struct{ known, late bool }

func (k *knowledge) add(known bool) {
	if known {
		k.known = true
	} else {
		k.late = true
	}
}
