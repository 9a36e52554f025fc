package reconcile

import (
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/paygate/paygate/processor"
	"github.com/paygate/paygate/retry"
)

// sentAt is a pending charge id first sent at at (and last sent 3 s later).
func sentAt(id string, at time.Time) Charge {
	c := pendingCharge()
	c.ID, c.CreatedAt, c.FirstSentAt, c.LastSentAt = id, at.Add(-time.Second), at, at.Add(3*time.Second)
	return c
}

// TestPlanSweep: overlapping send windows are listed in one span that covers each of them;
// disjoint ones in spans of their own, earliest first.
func TestPlanSweep(t *testing.T) {
	t.Parallel()
	p := Policy{}.withDefaults()
	before, after := p.ListBefore, p.ListAfter
	type span struct {
		from, to time.Time
		ids      []string
	}
	for _, tc := range []struct {
		name    string
		charges []Charge
		want    []span
	}{
		{"none", nil, nil},
		{"one charge: its window", []Charge{sentAt("ch_a", t0)},
			[]span{{t0.Add(-time.Second - before), t0.Add(3*time.Second + after), []string{"ch_a"}}}},
		{"overlapping windows: one span, in the order of the windows",
			[]Charge{sentAt("ch_b", t0.Add(time.Minute)), sentAt("ch_a", t0), sentAt("ch_c", t0.Add(2*time.Minute))},
			[]span{{t0.Add(-time.Second - before), t0.Add(2*time.Minute + 3*time.Second + after), []string{"ch_a", "ch_b", "ch_c"}}}},
		{"a window inside another: the outer one's bounds",
			[]Charge{func() Charge { c := sentAt("ch_long", t0); c.LastSentAt = t0.Add(time.Hour); return c }(), sentAt("ch_in", t0.Add(time.Minute))},
			[]span{{t0.Add(-time.Second - before), t0.Add(time.Hour + after), []string{"ch_long", "ch_in"}}}},
		{"disjoint windows: a span each, earliest first",
			[]Charge{sentAt("ch_late", t0.Add(3*time.Hour)), sentAt("ch_early", t0)},
			[]span{
				{t0.Add(-time.Second - before), t0.Add(3*time.Second + after), []string{"ch_early"}},
				{t0.Add(3*time.Hour - time.Second - before), t0.Add(3*time.Hour + 3*time.Second + after), []string{"ch_late"}},
			}},
		{"windows that touch: one span",
			[]Charge{sentAt("ch_a", t0), sentAt("ch_b", t0.Add(3*time.Second+after+before+time.Second))},
			[]span{{t0.Add(-time.Second - before), t0.Add(3*time.Second + after + before + time.Second + 3*time.Second + after), []string{"ch_a", "ch_b"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := PlanSweep(tc.charges, p)
			if len(got) != len(tc.want) {
				t.Fatalf("spans: got %d, want %d: %+v", len(got), len(tc.want), got)
			}
			for i, sp := range got {
				var ids []string
				for _, c := range sp.Charges {
					ids = append(ids, c.ID)
					if from, to := p.ListWindow(c); from.Before(sp.From) || to.After(sp.To) {
						t.Errorf("span %d [%s, %s] does not cover %s's window [%s, %s]", i, sp.From, sp.To, c.ID, from, to)
					}
				}
				w := tc.want[i]
				if !sp.From.Equal(w.from) || !sp.To.Equal(w.to) || !slices.Equal(ids, w.ids) {
					t.Errorf("span %d: got [%s, %s] %v, want [%s, %s] %v", i, sp.From, sp.To, ids, w.from, w.to, w.ids)
				}
			}
		})
	}
}

// onePass is a pass over span sp in one segment.
func onePass(sp SweepSpan, l listPass) sweepPass {
	return sweepPass{segs: segments(sp, 1), passes: []listPass{l}}
}

// TestSweepListing: each charge of a span gets the pass's pages and the PaymentIntents that
// carry its id, over its own window; the listing is complete for it when the pass read every
// page, or read past the start of its window.
func TestSweepListing(t *testing.T) {
	t.Parallel()
	p := Policy{}.withDefaults()
	a, b := sentAt("ch_a", t0), sentAt("ch_b", t0.Add(2*time.Minute))
	sp := PlanSweep([]Charge{a, b}, p)[0]
	piA := processor.Intent{ID: "pi_a", ChargeID: "ch_a", Created: t0.Add(time.Second)}
	piB := processor.Intent{ID: "pi_b", ChargeID: "ch_b", Created: t0.Add(2*time.Minute + time.Second)}
	failed := &ReadFailure{Class: retry.ClassRetry, HTTPStatus: 500}
	aFrom, _ := p.ListWindow(a)
	for _, tc := range []struct {
		name         string
		pass         listPass
		c            Charge
		wantIntents  []string
		wantComplete bool
	}{
		{"every page read: found", listPass{pages: 3, scanned: 250, complete: true, oldest: sp.From, intents: []processor.Intent{piB, piA}},
			a, []string{"pi_a"}, true},
		{"every page read: not there", listPass{pages: 3, scanned: 250, complete: true, oldest: sp.From, intents: []processor.Intent{piB}},
			a, nil, true},
		{"two PaymentIntents for one charge: both", listPass{pages: 1, complete: true, intents: []processor.Intent{piA, {ID: "pi_a2", ChargeID: "ch_a"}}},
			a, []string{"pi_a", "pi_a2"}, true},
		{"stopped before the window's start: incomplete", listPass{pages: 2, oldest: aFrom.Add(time.Second), intents: []processor.Intent{piB}, failure: failed},
			a, nil, false},
		{"stopped at the window's start: incomplete", listPass{pages: 2, oldest: aFrom, intents: []processor.Intent{piB}, failure: failed},
			a, nil, false},
		{"stopped past the window's start: complete for it", listPass{pages: 2, oldest: aFrom.Add(-time.Second), intents: []processor.Intent{piB}, failure: failed},
			b, []string{"pi_b"}, true},
		{"no page read", listPass{failure: failed}, a, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			from, to := p.ListWindow(tc.c)
			l := sweepListing(tc.c, from, to, sp, onePass(sp, tc.pass))
			var ids []string
			for _, in := range l.Intents {
				ids = append(ids, in.ID)
			}
			if !slices.Equal(ids, tc.wantIntents) || l.Complete != tc.wantComplete {
				t.Fatalf("got intents %v complete %v, want %v %v", ids, l.Complete, tc.wantIntents, tc.wantComplete)
			}
			if !l.From.Equal(from) || !l.To.Equal(to) || l.Pages != tc.pass.pages || l.Scanned != tc.pass.scanned {
				t.Fatalf("got [%s, %s] %d pages %d scanned, want the charge's window and the pass's pages", l.From, l.To, l.Pages, l.Scanned)
			}
			if s := l.Sweep; s == nil || !s.From.Equal(sp.From) || !s.To.Equal(sp.To) || s.Charges != 2 || s.Complete != tc.pass.complete || s.Failure != tc.pass.failure {
				t.Fatalf("span record: got %+v, want the pass over the span", l.Sweep)
			}
			if (l.Failure != nil) == l.Complete {
				t.Fatalf("failure %+v with complete %v: a listing complete for the charge carries none, an incomplete one the pass's", l.Failure, l.Complete)
			}
		})
	}
}

// TestSweepEvidenceDecides: a sweep's listing is evidence as a single check's is: it settles
// a charge it finds, and one it covers in full and does not contain is subject to the absence
// rule unchanged (no absence before the 24 h rule closes the key; two empty listings an hour
// apart after it).
func TestSweepEvidenceDecides(t *testing.T) {
	t.Parallel()
	p := Policy{}.withDefaults()
	c := sentAt("ch_a", t0)
	other := sentAt("ch_b", t0.Add(time.Minute))
	sp := PlanSweep([]Charge{c, other}, p)[0]
	from, to := p.ListWindow(c)
	found := processor.Intent{ID: "pi_a", ChargeID: "ch_a", Status: "succeeded", Amount: c.Amount, Currency: c.Currency,
		Customer: c.Customer, PaymentMethod: c.PaymentMethod, Created: t0}
	ev := func(at time.Time, pass listPass) Evidence {
		return Evidence{At: at, Account: testAccount, List: sweepListing(c, from, to, sp, onePass(sp, pass)),
			Search: &Search{Answered: true}}
	}
	empty := listPass{pages: 2, scanned: 120, complete: true}

	if d := Decide(c, ev(t0.Add(30*time.Second), listPass{pages: 1, complete: true, intents: []processor.Intent{found}}), p); d.Kind != KindResolve ||
		d.Outcome != OutcomeSucceeded || d.Path != PathList || d.PaymentIntent != "pi_a" {
		t.Fatalf("found: got %+v, want resolved succeeded by list", d)
	}
	if d := Decide(c, ev(t0.Add(30*time.Second), empty), p); d.Kind != KindPending {
		t.Fatalf("not there, key open: got %+v, want pending", d)
	}
	closed := c.KeyClosesAt().Add(time.Minute)
	first := ev(closed, empty)
	if d := Decide(c, first, p); d.Kind != KindReview || d.Reason != ReasonKeyClosedNoEvidence {
		t.Fatalf("not there, key closed: got %+v, want review %s", d, ReasonKeyClosedNoEvidence)
	}
	c.Checks = []Check{{N: 1, At: closed, Evidence: first}}
	if d := Decide(c, ev(closed.Add(AbsenceGap), empty), p); d.Kind != KindResolve || d.Path != PathAbsence {
		t.Fatalf("second empty listing an hour later: got %+v, want resolved failed by absence", d)
	}
	partial := listPass{pages: 1, oldest: from.Add(time.Minute), failure: &ReadFailure{Class: retry.ClassRetry}}
	if d := Decide(c, ev(closed.Add(AbsenceGap), partial), p); d.Kind == KindResolve {
		t.Fatalf("a listing that did not reach the window's start: got %+v, want no absence", d)
	}
}

// TestSegments: a span is cut at the first sends of its charges into segments that partition
// its whole seconds; a span of few charges is not cut.
func TestSegments(t *testing.T) {
	t.Parallel()
	p := Policy{}.withDefaults()
	many := func(n int, every time.Duration) []Charge {
		var cs []Charge
		for i := range n {
			cs = append(cs, sentAt("ch_"+strconv.Itoa(i), t0.Add(time.Duration(i)*every)))
		}
		return cs
	}
	for _, tc := range []struct {
		name    string
		charges []Charge
		n       int
		want    int
	}{
		{"one charge", many(1, 0), 4, 1},
		{"fewer than two segments' worth", many(2*sweepSegmentCharges-1, 10*time.Millisecond), 4, 1},
		{"two segments' worth", many(2*sweepSegmentCharges, 10*time.Millisecond), 4, 2},
		{"many charges", many(1000, 30*time.Millisecond), 4, 4},
		{"many charges in one second: no cut inside it", many(1000, 0), 4, 1},
		{"one lister", many(1000, 30*time.Millisecond), 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sp := PlanSweep(tc.charges, p)[0]
			segs := segments(sp, tc.n)
			if len(segs) != tc.want {
				t.Fatalf("segments: got %d %v, want %d", len(segs), segs, tc.want)
			}
			if segs[0].from != sp.From.Unix() || segs[len(segs)-1].to != ceilSecond(sp.To) {
				t.Fatalf("segments %v do not span [%d, %d]", segs, sp.From.Unix(), ceilSecond(sp.To))
			}
			for i := range segs {
				if segs[i].from > segs[i].to || (i > 0 && segs[i].from != segs[i-1].to+1) {
					t.Fatalf("segments %v: not a partition of the span's seconds", segs)
				}
			}
		})
	}
}

// TestSweepPassCovers: a window is read in full when every second of it lies in a segment read
// in full, or in the newer part of a segment whose pass stopped.
func TestSweepPassCovers(t *testing.T) {
	t.Parallel()
	sec := func(s int64) time.Time { return time.Unix(s, 0) }
	segs := []segment{{100, 199}, {200, 299}, {300, 399}}
	full := listPass{pages: 2, complete: true}
	stopped := func(oldest int64) listPass {
		return listPass{pages: 1, oldest: sec(oldest), failure: &ReadFailure{Class: retry.ClassRetry}}
	}
	for _, tc := range []struct {
		name     string
		passes   []listPass
		from, to time.Time
		want     bool
	}{
		{"all read", []listPass{full, full, full}, sec(100), sec(399), true},
		{"a segment stopped: a window inside the others", []listPass{full, stopped(250), full}, sec(120), sec(190), true},
		{"a segment stopped: a window reaching into its unread part", []listPass{full, stopped(250), full}, sec(150), sec(260), false},
		{"a segment stopped: a window in the part it read", []listPass{full, stopped(250), full}, sec(251), sec(350), true},
		{"a segment stopped at the window's first second", []listPass{full, stopped(250), full}, sec(250), sec(350), false},
		{"a fraction of a second: the window starts at the next whole one", []listPass{full, stopped(250), full}, sec(250).Add(time.Millisecond), sec(350), true},
		{"a segment with no page read", []listPass{full, {failure: &ReadFailure{}}, full}, sec(150), sec(210), false},
		{"a segment with no page read, outside the window", []listPass{full, {failure: &ReadFailure{}}, full}, sec(300), sec(399), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := (sweepPass{segs: segs, passes: tc.passes}).covers(tc.from, tc.to); got != tc.want {
				t.Fatalf("covers [%s, %s]: got %v, want %v", tc.from, tc.to, got, tc.want)
			}
		})
	}
}

// TestSweepsDue: an account's sweep is due once one of its due charges whose PaymentIntent id
// is unknown has waited the gather time, or a batch of them is due; the charges whose id is
// known, or that name no account, never make a sweep due.
func TestSweepsDue(t *testing.T) {
	t.Parallel()
	swept := func(account string, waited time.Duration) Due {
		return Due{ChargeID: "ch", Account: account, Waited: waited}
	}
	known := Due{ChargeID: "ch_k", Account: "acct_k", RefKnown: true, Waited: time.Hour}
	none := Due{ChargeID: "ch_n", Waited: time.Hour}
	for _, tc := range []struct {
		name   string
		due    []Due
		gather time.Duration
		batch  int
		want   []string
	}{
		{"nothing due", nil, 0, 10, nil},
		{"no gathering: every account with such a charge", []Due{swept("acct_a", 0), known, swept("acct_b", time.Second), none}, 0, 10,
			[]string{"acct_a", "acct_b"}},
		{"gathering: not yet", []Due{swept("acct_a", 10*time.Second), swept("acct_a", 5*time.Second)}, 30 * time.Second, 10, nil},
		{"gathering: the longest waiting has waited", []Due{swept("acct_a", 31*time.Second), swept("acct_a", time.Second),
			swept("acct_b", time.Second)}, 30 * time.Second, 10, []string{"acct_a"}},
		{"gathering: a batch is due", []Due{swept("acct_a", time.Second), swept("acct_a", time.Second)}, 30 * time.Second, 2,
			[]string{"acct_a"}},
		{"ids known or no account: no sweep", []Due{known, none}, 0, 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := SweepsDue(tc.due, tc.gather, tc.batch); !slices.Equal(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}
