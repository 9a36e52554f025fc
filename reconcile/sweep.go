package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/paygate/paygate/processor"
)

// SweepRecorders is how many checks of a sweep are decided and recorded at once: the list
// pass is shared, each charge's record is a transaction of its own.
const SweepRecorders = 8

// SweepSpan is one list pass of a sweep: a stretch of created times, the union of the
// overlapping send windows of the charges it checks.
type SweepSpan struct {
	From, To time.Time
	// Charges are the charges whose send window the span covers, earliest window first.
	Charges []Charge
}

// PlanSweep groups charges into the spans a sweep lists, earliest first: each charge's send
// window (Policy.ListWindow), overlapping windows merged into one span. A span covers every
// window of its charges; no two spans overlap. It is pure.
func PlanSweep(cs []Charge, p Policy) []SweepSpan {
	type window struct {
		from, to time.Time
		c        Charge
	}
	ws := make([]window, 0, len(cs))
	for _, c := range cs {
		from, to := p.ListWindow(c)
		ws = append(ws, window{from, to, c})
	}
	slices.SortStableFunc(ws, func(a, b window) int { return a.from.Compare(b.from) })
	var out []SweepSpan
	for _, w := range ws {
		if n := len(out); n > 0 && !w.from.After(out[n-1].To) {
			last := &out[n-1]
			if w.to.After(last.To) {
				last.To = w.to
			}
			last.Charges = append(last.Charges, w.c)
			continue
		}
		out = append(out, SweepSpan{From: w.from, To: w.to, Charges: []Charge{w.c}})
	}
	return out
}

// SweepListers is how many segments of a span a sweep lists at once, each with its own
// cursor: a page waits for the one before it, and the read rate is only reached with several
// pages in flight.
const SweepListers = 4

// sweepSegmentCharges is how many charges a segment of a span holds at least: a segment
// costs at least one page, so a span is only cut where each part likely fills pages.
const sweepSegmentCharges = 100

// segment is a part of a span, in whole seconds of created time, both ends included.
type segment struct{ from, to int64 }

// segments cuts span sp into at most n disjoint segments that cover its whole seconds, cut
// at the first sends of its charges so that each segment holds about as many: the
// PaymentIntents of a window are created around the sends of the charges in it. A span of
// fewer than 2 × sweepSegmentCharges charges is one segment. It is pure.
func segments(sp SweepSpan, n int) []segment {
	lo, hi := sp.From.Unix(), ceilSecond(sp.To)
	n = min(n, len(sp.Charges)/sweepSegmentCharges)
	if n <= 1 {
		return []segment{{lo, hi}}
	}
	sends := make([]int64, 0, len(sp.Charges))
	for _, c := range sp.Charges {
		sends = append(sends, c.firstSent().Unix())
	}
	slices.Sort(sends)
	var out []segment
	from := lo
	for i := 1; i < n; i++ {
		// No cut at the earliest send: before it lies only the window's margin.
		cut := sends[i*len(sends)/n]
		if cut <= from || cut <= sends[0] || cut > hi {
			continue
		}
		out = append(out, segment{from, cut - 1})
		from = cut
	}
	return append(out, segment{from, hi})
}

// ceilSecond is t in whole seconds, rounded up.
func ceilSecond(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return s
}

// sweepPass is what a sweep read of a span: one list pass per segment.
type sweepPass struct {
	segs   []segment
	passes []listPass
}

func (p sweepPass) pages() (n int) {
	for _, l := range p.passes {
		n += l.pages
	}
	return n
}

func (p sweepPass) scanned() (n int) {
	for _, l := range p.passes {
		n += l.scanned
	}
	return n
}

// complete reports that every page of every segment was read.
func (p sweepPass) complete() bool {
	for _, l := range p.passes {
		if !l.complete {
			return false
		}
	}
	return true
}

// failure is the first failure that stopped a segment's pass.
func (p sweepPass) failure() *ReadFailure {
	for _, l := range p.passes {
		if l.failure != nil {
			return l.failure
		}
	}
	return nil
}

// covers reports whether the pass read every PaymentIntent created in [from, to]: each whole
// second of it lies in a segment read in full, or in the part of a segment its pages read
// (the list is newest first: a pass that stopped read every PaymentIntent created after the
// last one it read).
func (p sweepPass) covers(from, to time.Time) bool {
	need0, need1 := ceilSecond(from), to.Unix()
	for i, sg := range p.segs {
		lo, hi := max(need0, sg.from), min(need1, sg.to)
		if lo > hi {
			continue // the window does not reach into this segment
		}
		l := p.passes[i]
		switch {
		case l.complete:
		case l.pages > 0 && !l.oldest.IsZero() && l.oldest.Unix() < lo:
		default:
			return false
		}
	}
	return true
}

// sweepListing is the Listing a sweep's pass over span sp gives charge c, whose send window
// is [from, to]: the charge's window, the pages of the pass, and the PaymentIntents of the
// pass that carry the charge id. It is complete for the charge when the pass read every
// PaymentIntent created in the charge's window (sweepPass.covers); the pass's failure then does
// not concern the charge, and stays in the span's record. It is pure.
func sweepListing(c Charge, from, to time.Time, sp SweepSpan, pass sweepPass) *Listing {
	l := &Listing{From: from, To: to, Pages: pass.pages(), Scanned: pass.scanned(),
		Sweep: &SweptSpan{From: sp.From, To: sp.To, Charges: len(sp.Charges), Complete: pass.complete(), Failure: pass.failure()}}
	for _, lp := range pass.passes {
		for _, in := range lp.intents {
			if in.ChargeID == c.ID {
				l.Intents = append(l.Intents, in)
			}
		}
	}
	l.Complete = pass.complete() || pass.covers(from, to)
	if !l.Complete {
		l.Failure = pass.failure()
	}
	return l
}

// listSpan lists the segments of span sp, SweepListers at once, each with its own cursor at
// the read rate, keeping the PaymentIntents keep accepts.
func (r *Reconciler) listSpan(ctx context.Context, sp SweepSpan, keep func(processor.Intent) bool) (sweepPass, error) {
	p := sweepPass{segs: segments(sp, SweepListers)}
	p.passes = make([]listPass, len(p.segs))
	errs := make([]error, len(p.segs))
	var wg sync.WaitGroup
	for i, sg := range p.segs {
		wg.Go(func() {
			p.passes[i], errs[i] = r.list(ctx, time.Unix(sg.from, 0), time.Unix(sg.to, 0), keep)
		})
	}
	wg.Wait()
	return p, errors.Join(errs...)
}

// SweepResult is what one sweep did.
type SweepResult struct {
	// Checks are the checks recorded, one per charge that got one.
	Checks []Check
	// Spans and Pages are the list passes made and the pages they read.
	Spans, Pages int
	// Stale counts the charges whose check another reconciler recorded first.
	Stale int
}

// Settled counts the checks of the sweep that resolved their charge.
func (s SweepResult) Settled() int {
	n := 0
	for _, chk := range s.Checks {
		if chk.Decision.Kind == KindResolve {
			n++
		}
	}
	return n
}

// Sweep checks charges together: those of the processor's account whose PaymentIntent id is
// unknown share one list pass per span of their send windows (PlanSweep), cursor-paginated
// over created times, each PaymentIntent matched to its charge by the charge id in its
// metadata. Each charge then gets one check of its own, recorded as Reconcile records one:
// its evidence is the shared listing (a charge the listing covers in full and does not contain
// gets the search a single check makes, and is subject to the absence rule as it stands), the
// decision is Decide's, the replay, the account's confirmation and the record are
// Reconcile's. A charge whose PaymentIntent id is known, or of another account, gets a check
// of its own (Reconcile): the retrieve path, or review without a read.
//
// It returns an error when ctx ends, a limiter refuses, the account cannot be confirmed or
// changes, or a check cannot be recorded; the checks recorded until then stand (the result
// says which). A check another reconciler recorded first counts as Stale.
func (r *Reconciler) Sweep(ctx context.Context, cs []Charge) (SweepResult, error) {
	var res SweepResult
	account, err := r.confirm(ctx)
	if err != nil {
		return res, fmt.Errorf("reconcile: sweep: %w", err)
	}
	var swept []Charge
	for _, c := range cs {
		if c.ProcessorRef == "" && c.Account == account {
			swept = append(swept, c)
			continue
		}
		chk, err := r.Reconcile(ctx, c)
		if err := res.add(chk, err); err != nil {
			return res, err
		}
	}
	now := r.now()
	for _, sp := range PlanSweep(swept, r.policy) {
		ids := make(map[string]bool, len(sp.Charges))
		for _, c := range sp.Charges {
			ids[c.ID] = true
		}
		pass, err := r.listSpan(ctx, sp, func(in processor.Intent) bool { return ids[in.ChargeID] })
		res.Spans++
		res.Pages += pass.pages()
		if err != nil {
			return res, fmt.Errorf("reconcile: sweep of %d charges: list: %w", len(sp.Charges), err)
		}
		if err := r.sweepChecks(ctx, sp, pass, account, now, &res); err != nil {
			return res, err
		}
	}
	return res, nil
}

// sweepChecks decides and records the check of each charge of span sp on the pass's
// evidence, SweepRecorders at a time; it stops at the first error.
func (r *Reconciler) sweepChecks(ctx context.Context, sp SweepSpan, pass sweepPass, account string, now time.Time, res *SweepResult) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var (
		mu   sync.Mutex
		wg   sync.WaitGroup
		sem  = make(chan struct{}, SweepRecorders)
		errs []error
	)
	for _, c := range sp.Charges {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Go(func() {
			defer func() { <-sem }()
			chk, err := r.sweepCheck(ctx, c, sp, pass, account, now)
			mu.Lock()
			defer mu.Unlock()
			if err := res.add(chk, err); err != nil {
				errs = append(errs, err)
				cancel(err)
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return errs[0]
	}
	return context.Cause(ctx)
}

// sweepCheck is one charge's check in a sweep: the shared listing, the search when it found no
// PaymentIntent for the charge, then what Reconcile does after its reads.
func (r *Reconciler) sweepCheck(ctx context.Context, c Charge, sp SweepSpan, pass sweepPass, account string, now time.Time) (Check, error) {
	from, to := r.policy.ListWindow(c)
	ev := Evidence{At: now, Account: account, List: sweepListing(c, from, to, sp, pass)}
	if len(ev.List.Intents) == 0 {
		s, err := r.search(ctx, c, now)
		if err != nil {
			return Check{}, err
		}
		ev.Search = s
	}
	return r.conclude(ctx, c, Check{N: c.nextCheckNumber(), At: now, Manual: c.Manual}, ev)
}

// add counts a check of the sweep: a recorded one, or a stale one; another error is returned.
func (s *SweepResult) add(chk Check, err error) error {
	switch {
	case errors.Is(err, ErrStale):
		s.Stale++
	case err != nil:
		return err
	case chk.N > 0:
		s.Checks = append(s.Checks, chk)
	}
	return nil
}
