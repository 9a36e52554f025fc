package report

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	"github.com/paygate/paygate/decline"
)

const day = 24 * time.Hour

// Lookback is how far before a period the history of a card is read: the
// longest network window.
const Lookback = 30 * day

// The networks' windows, as [decline.Audit] counts them.
const (
	longWindow  = 30 * day
	shortWindow = 24 * time.Hour
)

// Query asks for the report of one period.
type Query struct {
	// From and To bound the period, both included. Zero values take the
	// defaults of [Service.Reattempts].
	From, To time.Time
	// Merchant, when set, limits the report to the cards the merchant had an
	// attempt or a reattempt decision on in the period, and hides the ids of
	// the other merchants involved. Empty: every card, every merchant named.
	Merchant string
}

// Since returns the start of the history read for q: [Lookback] before From.
func (q Query) Since() time.Time { return q.From.Add(-Lookback) }

// Attempt is one attempt of a card's history with its Visa decline category.
type Attempt struct {
	decline.Attempt
	// Category is the Visa category of a declined or blocked Visa attempt;
	// 0 otherwise.
	Category decline.Category
}

// Card is one card at one processor account, with what the report of a
// period needs of it. The store fills it.
type Card struct {
	// ProcessorAccount is the processor account the card was charged at.
	ProcessorAccount string
	// Fingerprint is the processor's fingerprint of the card number.
	Fingerprint string
	// Network is the card's network; a fingerprint names one card number,
	// whose network does not change.
	Network decline.Network
	// Merchants are the merchants with an attempt or a reattempt decision
	// on the card in the period, every merchant included, sorted.
	Merchants []string
	// Refused counts the reattempt decisions that refused an attempt on the
	// card in the period, for every merchant.
	Refused int
	// Attempts holds every attempt from [Query.Since] to To and, from before
	// Since, the last authorization (an attempt that is not a processor
	// block) and the first never-class decline or block, in any order.
	Attempts []Attempt
}

// Row is the report's line for one card. Its JSON field names are stable.
type Row struct {
	// ProcessorAccount is the processor account.
	ProcessorAccount string `json:"processor_account"`
	// Fingerprint is the card's fingerprint at the processor.
	Fingerprint string `json:"fingerprint"`
	// Network is the card network: visa, mastercard, amex, discover or
	// unknown.
	Network string `json:"network"`
	// Merchants counts the merchants involved with the card in the period.
	Merchants int `json:"merchants"`
	// MerchantIDs names the merchants involved that the reader may see:
	// all of them, or only the asking merchant (see [Query.Merchant]).
	MerchantIDs []string `json:"merchant_ids"`
	// Attempts counts the attempts in the period, processor blocks
	// included.
	Attempts int `json:"attempts"`
	// Declines counts the declined attempts in the period (not pending
	// ones, not blocks).
	Declines int `json:"declines"`
	// DeclinesByClass counts the period's declines per class; every class
	// is present.
	DeclinesByClass map[decline.Class]int `json:"declines_by_class"`
	// DeclinesByCategory counts the period's declines per Visa category,
	// "1" to "4"; every category is present, all zero for other networks.
	DeclinesByCategory map[string]int `json:"declines_by_category"`
	// Reattempts counts the authorizations in the period sent after a
	// decline with no approval between (a pending attempt neither opens nor
	// ends a run).
	Reattempts int `json:"reattempts"`
	// MaxReattempts30d is the largest number of Visa reattempts in a rolling
	// 30 days ending within the period.
	MaxReattempts30d int `json:"max_reattempts_30d"`
	// MaxDeclines24h is the largest number of Mastercard declines in a
	// rolling 24 hours ending within the period.
	MaxDeclines24h int `json:"max_declines_24h"`
	// MaxDeclines30d is the same over a rolling 30 days.
	MaxDeclines30d int `json:"max_declines_30d"`
	// ReattemptsRefused counts the attempts the gateway refused on the card
	// in the period (network caps, never-class, schedule, card data).
	ReattemptsRefused int `json:"reattempts_refused"`
	// Violations counts the period's attempts that broke a network rule;
	// it must be 0.
	Violations int `json:"violations"`
	// ViolationsDetail lists them, in time order, once per rule broken.
	ViolationsDetail []decline.Violation `json:"violations_detail"`
	// ViolationsInHindsight counts the period's attempts that broke a rule
	// only in hindsight: sent while the earlier attempt whose outcome forbids
	// them was pending, its outcome found later (see decline.Findings). The
	// gateway could not refuse them; the network may still count them.
	ViolationsInHindsight int `json:"violations_in_hindsight"`
	// ViolationsInHindsightDetail lists them like ViolationsDetail.
	ViolationsInHindsightDetail []decline.Violation `json:"violations_in_hindsight_detail"`
}

// classes are the decline classes, in the order of the JSON counts; the CSV columns keep
// the first five in place and append the later ones at the end (see Columns).
var classes = []decline.Class{decline.Never, decline.FixData, decline.Funds, decline.IssuerTransient, decline.Generic,
	decline.Authenticate}

// csvClasses is how many classes have their column among the first ones; the others follow
// the last column of the first release.
const csvClasses = 5

// categories are the Visa categories, in the order of the CSV columns.
var categories = []decline.Category{decline.CategoryNeverApprove, decline.CategoryCannotApproveNow,
	decline.CategoryDataQuality, decline.CategoryGeneric}

// Build returns the report's rows for cards over q's period, sorted by
// processor account and fingerprint. q.From and q.To must be set. Counts
// come from [decline.Audit] with caps.
func Build(cards []Card, q Query, caps decline.Caps) []Row {
	rows := make([]Row, 0, len(cards))
	for _, c := range cards {
		rows = append(rows, build(c, q, caps))
	}
	slices.SortFunc(rows, func(a, b Row) int {
		return cmp.Or(cmp.Compare(a.ProcessorAccount, b.ProcessorAccount), cmp.Compare(a.Fingerprint, b.Fingerprint),
			cmp.Compare(a.Network, b.Network))
	})
	return rows
}

func build(c Card, q Query, caps decline.Caps) Row {
	r := Row{
		ProcessorAccount:   c.ProcessorAccount,
		Fingerprint:        c.Fingerprint,
		Network:            c.Network.String(),
		Merchants:          len(c.Merchants),
		MerchantIDs:        slices.Clone(c.Merchants),
		DeclinesByClass:    make(map[decline.Class]int, len(classes)),
		DeclinesByCategory: make(map[string]int, len(categories)),
		ReattemptsRefused:  c.Refused,
		ViolationsDetail:   []decline.Violation{},

		ViolationsInHindsightDetail: []decline.Violation{},
	}
	if q.Merchant != "" {
		r.MerchantIDs = []string{}
		if slices.Contains(c.Merchants, q.Merchant) {
			r.MerchantIDs = []string{q.Merchant}
		}
	}
	if r.MerchantIDs == nil {
		r.MerchantIDs = []string{}
	}

	// Counts of the period: the audit of the history up to To, less the
	// audit of the history before From. What Audit finds about an attempt
	// depends only on the attempts before it, so the difference is exact.
	upTo := history(c.Attempts, func(a Attempt) bool { return !a.At.After(q.To) })
	before := history(c.Attempts, func(a Attempt) bool { return a.At.Before(q.From) })
	all, prior := decline.Audit(upTo, caps), decline.Audit(before, caps)
	r.Attempts = all.Attempts - prior.Attempts
	r.Declines = all.Declines - prior.Declines
	r.Reattempts = all.Reattempts - prior.Reattempts
	for _, cl := range classes {
		r.DeclinesByClass[cl] = all.DeclinesByClass[cl] - prior.DeclinesByClass[cl]
	}
	for _, v := range all.Violations {
		if !v.At.Before(q.From) {
			r.ViolationsDetail = append(r.ViolationsDetail, v)
		}
	}
	r.Violations = len(r.ViolationsDetail)
	for _, v := range all.InHindsight {
		if !v.At.Before(q.From) {
			r.ViolationsInHindsightDetail = append(r.ViolationsInHindsightDetail, v)
		}
	}
	r.ViolationsInHindsight = len(r.ViolationsInHindsightDetail)

	for _, cat := range categories {
		r.DeclinesByCategory[strconv.Itoa(int(cat))] = 0
	}
	for _, a := range c.Attempts {
		if a.Outcome == decline.Declined && !a.At.Before(q.From) && !a.At.After(q.To) && a.Category != decline.CategoryNone {
			r.DeclinesByCategory[strconv.Itoa(int(a.Category))]++
		}
	}

	// The largest window counts: Audit over the attempts of the windows that
	// end within the period (see window).
	long := decline.Audit(window(c.Attempts, q, longWindow), caps)
	short := decline.Audit(window(c.Attempts, q, shortWindow), caps)
	r.MaxReattempts30d = long.MaxVisaReattempts30d
	r.MaxDeclines30d = long.MaxMastercardDeclines30d
	r.MaxDeclines24h = short.MaxMastercardDeclines24h
	return r
}

// history returns the attempts that keep holds for, as a decline.History.
func history(as []Attempt, keep func(Attempt) bool) decline.History {
	h := make(decline.History, 0, len(as))
	for _, a := range as {
		if keep(a) {
			h = append(h, a.Attempt)
		}
	}
	return h
}

// window returns the history whose largest count of length w, as Audit
// reports it, is the largest count in a window of length w that ends within
// q's period.
//
// It holds the attempts after From−w up to To. Audit counts a window at each
// attempt; a window that ends at an attempt of the period is then complete,
// and one that ends at an attempt before From is cut at From−w, so it counts
// no more than the window that ends at From, which the last of them counts
// exactly. Whether a reattempt opens the history depends on the last
// authorization before it: that one is kept as a stand-in with the same
// outcome on a network neither cap applies to, so it sets the run without
// being counted.
func window(as []Attempt, q Query, w time.Duration) decline.History {
	start := q.From.Add(-w)
	h := history(as, func(a Attempt) bool { return a.At.After(start) && !a.At.After(q.To) })
	var last *Attempt
	for i, a := range as {
		if a.At.After(start) || a.Outcome == decline.Blocked {
			continue
		}
		if last == nil || !a.At.Before(last.At) {
			last = &as[i]
		}
	}
	if last != nil {
		h = append(h, decline.Attempt{At: last.At, Outcome: last.Outcome, Network: decline.Amex})
	}
	return h
}
