package reconcile

import (
	"context"
	"fmt"
	"time"

	"github.com/paygate/paygate/processor"
)

// Reads are the processor reads reconciliation makes. *processor.Client implements it.
type Reads interface {
	// Retrieve reads one PaymentIntent by id.
	Retrieve(ctx context.Context, paymentIntentID string) (processor.Intent, processor.ReadResult)
	// ListByCreated reads one page of the PaymentIntents created in [from, to], newest first.
	ListByCreated(ctx context.Context, from, to time.Time, startingAfter string, limit int) (processor.IntentPage, processor.ReadResult)
	// SearchByCharge finds the PaymentIntents carrying a charge id in their metadata.
	SearchByCharge(ctx context.Context, chargeID string) ([]processor.Intent, processor.ReadResult)
}

var _ Reads = (*processor.Client)(nil)

// Replayer replays a charge's request under its processor key: the persisted parameters,
// byte for byte, as the charge engine sends them, in one attempt. The context's deadline is
// at the latest when the 24 h rule closes the key; the request must not be sent after it.
type Replayer interface {
	Replay(ctx context.Context, chargeID string) processor.Attempt
}

// gather makes the reads of one check at account (the processor's, confirmed), in order:
// retrieve by processor_ref when known (a found PaymentIntent ends the reads); the list of
// the send window, page by page, keeping the PaymentIntents that carry the charge id (one
// found ends the reads); then the search.
// Every call waits its turn on its rate limiter. A read that fails is recorded and the next
// one is made; only the context ending (or a limiter refusing) is an error.
func (r *Reconciler) gather(ctx context.Context, c Charge, account string, now time.Time) (Evidence, error) {
	ev := Evidence{At: now, Account: account}
	if c.ProcessorRef != "" {
		if err := r.wait(ctx, r.readLimit, "retrieve"); err != nil {
			return ev, err
		}
		rctx, cancel := context.WithTimeout(ctx, r.readTimeout)
		in, res := r.reads.Retrieve(rctx, c.ProcessorRef)
		cancel()
		ev.Retrieve = &Retrieval{ID: c.ProcessorRef}
		switch {
		case res.Answered() && res.NotFound:
			ev.Retrieve.NotFound = true
		case res.Answered():
			ev.Retrieve.Intent = &in
			return ev, nil
		default:
			ev.Retrieve.Failure = failureOf(res)
		}
		if err := ctx.Err(); err != nil {
			return ev, fmt.Errorf("reconcile: charge %s: retrieve: %w", c.ID, err)
		}
	}

	from, to := r.policy.ListWindow(c)
	pass, err := r.list(ctx, from, to, func(in processor.Intent) bool { return in.ChargeID == c.ID })
	ev.List = &Listing{From: from, To: to, Pages: pass.pages, Scanned: pass.scanned, Complete: pass.complete,
		Intents: pass.intents, Failure: pass.failure}
	if err != nil {
		return ev, fmt.Errorf("reconcile: charge %s: list: %w", c.ID, err)
	}
	if len(ev.List.Intents) > 0 {
		return ev, nil
	}
	if ev.Search, err = r.search(ctx, c, now); err != nil {
		return ev, err
	}
	return ev, nil
}

// listPass is what one list pass over a window of created times read.
type listPass struct {
	pages, scanned int
	// complete reports that every page of the window was read.
	complete bool
	// oldest is the created time of the last PaymentIntent read (the oldest: the list is
	// newest first); zero when none was.
	oldest time.Time
	// intents are the PaymentIntents read that the pass kept.
	intents []processor.Intent
	// failure is set when a page gave no answer (the pass stopped there).
	failure *ReadFailure
}

// list reads the PaymentIntents created in [from, to], page by page (cursor pagination, at
// most maxListPages), keeping those keep accepts. Every page waits its turn on the read
// limiter. A page that fails ends the pass, recorded; only the context ending (or the limiter
// refusing) is an error.
func (r *Reconciler) list(ctx context.Context, from, to time.Time, keep func(processor.Intent) bool) (listPass, error) {
	var p listPass
	after := ""
	for p.pages < r.maxListPages {
		if err := r.wait(ctx, r.readLimit, "list"); err != nil {
			return p, err
		}
		rctx, cancel := context.WithTimeout(ctx, r.readTimeout)
		page, res := r.reads.ListByCreated(rctx, from, to, after, r.listPageSize)
		cancel()
		if !res.Answered() || res.NotFound {
			// A collection cannot be "not found": only a page read in full counts.
			p.failure = failureOf(res)
			break
		}
		p.pages++
		p.scanned += len(page.Intents)
		for _, in := range page.Intents {
			if keep(in) {
				p.intents = append(p.intents, in)
			}
		}
		if len(page.Intents) > 0 {
			p.oldest = page.Intents[len(page.Intents)-1].Created
		}
		if !page.HasMore || len(page.Intents) == 0 {
			p.complete = true
			break
		}
		after = page.Intents[len(page.Intents)-1].ID
	}
	return p, ctx.Err()
}

// search runs the metadata search for charge c, at the search rate: a check makes it when
// the list found no PaymentIntent for the charge. A failed search is evidence; only ctx
// ending (or the limiter refusing) is an error.
func (r *Reconciler) search(ctx context.Context, c Charge, now time.Time) (*Search, error) {
	if err := r.wait(ctx, r.searchLimit, "search"); err != nil {
		return nil, err
	}
	rctx, cancel := context.WithTimeout(ctx, r.readTimeout)
	found, res := r.reads.SearchByCharge(rctx, c.ID)
	cancel()
	s := &Search{Answered: res.Answered() && !res.NotFound}
	for _, in := range found {
		if in.ChargeID == c.ID {
			s.Intents = append(s.Intents, in)
		}
	}
	if !s.Answered {
		s.Failure = failureOf(res)
	}
	s.MayLag = s.Answered && len(s.Intents) == 0 && now.Sub(c.lastSent()) < r.policy.SearchLag
	if err := ctx.Err(); err != nil {
		return s, fmt.Errorf("reconcile: charge %s: search: %w", c.ID, err)
	}
	return s, nil
}
