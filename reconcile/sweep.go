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

// sweepListing is the Listing a sweep's pass over span sp gives charge c, whose send window
// is [from, to]: the charge's window, the pages of the pass, and the PaymentIntents of the
// pass that carry the charge id. It is complete for the charge when the pass read every page
// of the span, or read past the start of the charge's window (the list is newest first: every
// PaymentIntent created in the window was read); the pass's failure then does not concern the
// charge, and stays in the span's record. It is pure.
func sweepListing(c Charge, from, to time.Time, sp SweepSpan, pass listPass) *Listing {
	l := &Listing{From: from, To: to, Pages: pass.pages, Scanned: pass.scanned,
		Sweep: &SweptSpan{From: sp.From, To: sp.To, Charges: len(sp.Charges), Complete: pass.complete, Failure: pass.failure}}
	for _, in := range pass.intents {
		if in.ChargeID == c.ID {
			l.Intents = append(l.Intents, in)
		}
	}
	l.Complete = pass.complete || (!pass.oldest.IsZero() && pass.oldest.Before(from))
	if !l.Complete {
		l.Failure = pass.failure
	}
	return l
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
		pass, err := r.list(ctx, sp.From, sp.To, func(in processor.Intent) bool { return ids[in.ChargeID] })
		res.Spans++
		res.Pages += pass.pages
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
func (r *Reconciler) sweepChecks(ctx context.Context, sp SweepSpan, pass listPass, account string, now time.Time, res *SweepResult) error {
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
func (r *Reconciler) sweepCheck(ctx context.Context, c Charge, sp SweepSpan, pass listPass, account string, now time.Time) (Check, error) {
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
