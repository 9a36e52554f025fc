package charge

import (
	"context"
	"errors"
	"time"

	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/idempotency"
)

// BeginParams are what a keyed request brings to its first phase (see Begin).
type BeginParams struct {
	MerchantID  string
	Key         string
	Fingerprint idempotency.Fingerprint
	LockFor     time.Duration
	// New is the charge to create when the key has none, at the account the gateway talks
	// to now; its Chain and ReattemptOf are set for a reattempt.
	New Charge
	// Card is New's card as the processor has it now; nil when it could not be read.
	Card *Card
	Caps decline.Caps
}

// Begin runs the first phase of a keyed request through st. A new key for an original charge
// on a card with no refusal on record — the common case — is written with its charge at once
// (Store.Create): the network rules allow any attempt on such a card and it is no reattempt,
// so there is no decision to record. Anything else, or a creation whose assumptions did not
// hold, is decided on what the store reads (Store.Begin).
func Begin(ctx context.Context, st Store, r BeginParams) (Plan, error) {
	if r.Card != nil && r.New.ReattemptOf == "" {
		c := r.New
		c.Card, c.Chain, c.Status, c.IdempotencyKey = r.Card, c.ID, StatusProcessing, r.Key
		now, err := st.Create(ctx, Creation{Charge: &c, Key: r.Key, Fingerprint: r.Fingerprint, LockFor: r.LockFor})
		if err == nil {
			c.CreatedAt, c.UpdatedAt, c.CardAt = now, now, &now
			return Plan{Verdict: idempotency.Proceed, Charge: &c, Created: true, Now: now}, nil
		}
		if !errors.Is(err, ErrNotApplied) {
			return Plan{}, err
		}
	}
	return st.Begin(ctx, r.query(), r.plan)
}

// query returns what Store.Begin reads for r.
func (r BeginParams) query() SnapshotQuery {
	return SnapshotQuery{MerchantID: r.MerchantID, Key: r.Key, Fingerprint: r.Fingerprint, Account: r.New.ProcessorAccount, Card: r.Card,
		Chain: r.New.Chain, Reference: r.New.Reference}
}

// plan decides the first phase of r on snapshot s: the key's verdict, and whether a charge is
// created, reopened, resumed or answered as it stands, with the rows that says to write. It is
// pure: the store read s under the locks that serialise it, and applies the plan.
func (r BeginParams) plan(s Snapshot) (Plan, error) {
	p := Plan{Now: s.Now}
	if s.Key == nil {
		return r.planCreate(s, p, true), nil
	}
	p.Record = *s.Key
	p.Verdict = idempotency.Decide(p.Record, r.Fingerprint, s.Now)
	if p.Verdict != idempotency.Proceed {
		if p.Verdict != idempotency.Mismatch {
			p.Charge = s.Charge
		}
		return p, nil
	}
	if s.Charge == nil {
		// The key is bound, and names no charge: the same request, refused before, runs again.
		return r.planCreate(s, p, false), nil
	}
	c := *s.Charge
	p.Charge, p.PriorStatus = &c, c.Status
	lockUntil := s.Now.Add(r.LockFor)
	p.Writes.LockKey, p.Writes.KeyCharge, p.Writes.LockUntil = true, c.ID, &lockUntil
	switch {
	case c.Status == StatusProcessing:
		// A run left mid-flight resumes: its decline is judged on the card's history without
		// its own attempt, as its first run's would have been.
		h, ok := r.history(s, &c)
		if !ok {
			return Plan{NeedFullHistory: true}, nil
		}
		p.History = h
	case c.Status == StatusFailed && c.Failure != nil && c.Failure.Retryable:
		return r.planRerun(s, p)
	}
	// Any other status is answered as it stands (the engine stores the answer).
	return p, nil
}

// planRerun decides whether the key's retryably failed charge runs again: the same operation,
// decided again by the network rules on the card as the processor has it now. From the plan
// on until its outcome is stored it may reach the processor, so a crash leaves it processing.
func (r BeginParams) planRerun(s Snapshot, p Plan) (Plan, error) {
	c := p.Charge
	unlock := func(p Plan) Plan {
		p.Writes.LockUntil = nil // no request runs under the key
		return p
	}
	switch {
	case r.Card == nil:
		// The card cannot be read now, and the rules decide on the card as the processor
		// has it: the charge stays failed, retryably.
		return p, nil
	case !c.keyOpen(s.Now) || (c.ProcessorAccount != "" && c.ProcessorAccount != r.New.ProcessorAccount):
		// Nothing may be written under its processor key any more, or not at the account
		// the gateway talks to now: it stays failed (the engine makes it final), and no rule
		// admits an attempt that cannot happen.
		return p, nil
	}
	if c.ReattemptOf != "" && s.LiveReattempt != "" {
		return Plan{Now: s.Now, LiveReattempt: s.LiveReattempt}, nil
	}
	if c.Card == nil || c.Card.Fingerprint != r.Card.Fingerprint {
		card := *r.Card
		c.Card = &card
		p.Writes.RecordCard = true
	}
	h, ok := r.history(s, c)
	if !ok {
		return Plan{NeedFullHistory: true}, nil
	}
	v := decline.Check(h, r.next(s, c), r.Caps)
	if !v.Allowed {
		p.Writes.Decision = r.decision(s, c, v, "")
		p.Refused = &v
		return unlock(p), nil
	}
	if c.Reference != "" && s.LiveReference != "" {
		p.DuplicateOf = s.LiveReference
		return unlock(p), nil
	}
	if v.Reattempt {
		p.Writes.Decision = r.decision(s, c, v, c.ID)
	}
	p.Writes.Reopen = true
	p.Writes.CardState = r.fold(s, c.ID)
	c.Status, c.Failure = StatusProcessing, nil
	p.History = h
	return p, nil
}

// planCreate decides the key's new charge: created when the network rules allow the card
// now, else refused with the key bound to the request and naming no charge. newKey says the
// key is written by the plan.
func (r BeginParams) planCreate(s Snapshot, p Plan, newKey bool) Plan {
	if s.LiveReattempt != "" && r.New.ReattemptOf != "" {
		// Another reattempt of the chain is live: the order may be paid, whatever the card
		// rules would say. Nothing is written: the key stays as it was.
		return Plan{Now: s.Now, LiveReattempt: s.LiveReattempt}
	}
	c := r.New
	c.Card = r.Card
	if c.Chain == "" {
		c.Chain = c.ID
	}
	bind := func(p Plan, chargeID string, lockUntil *time.Time) Plan {
		p.Writes.InsertKey, p.Writes.LockKey = newKey, !newKey
		p.Writes.KeyCharge, p.Writes.LockUntil = chargeID, lockUntil
		return p
	}
	if c.Card == nil {
		// Without its card the charge cannot be admitted: it is stored failed, retryably,
		// and a retry with the same key reads the card again.
		c.Status, c.Failure = StatusFailed, &Failure{Code: CodeCardUnavailable, Retryable: true}
		p.Writes.CreatedEvent = true
	} else {
		h, ok := r.history(s, nil)
		if !ok {
			return Plan{NeedFullHistory: true}
		}
		v := decline.Check(h, r.next(s, &c), r.Caps)
		if !v.Allowed {
			p.Writes.Decision = r.decision(s, &c, v, "")
			p.Refused = &v
			return bind(p, "", nil)
		}
		if c.Reference != "" && s.LiveReference != "" {
			p.DuplicateOf = s.LiveReference
			return bind(p, "", nil)
		}
		if v.Reattempt {
			p.Writes.Decision = r.decision(s, &c, v, c.ID)
		}
		p.Writes.CardState = r.fold(s, "")
		p.History = h
		c.Status = StatusProcessing
	}
	c.IdempotencyKey = r.Key
	c.CreatedAt, c.UpdatedAt = s.Now, s.Now
	p.Charge, p.Created, p.Verdict = &c, true, idempotency.Proceed
	p.Writes.CreateCharge = true
	lockUntil := s.Now.Add(r.LockFor)
	return bind(p, c.ID, &lockUntil)
}

// next is the attempt the network rules are asked about for charge c now.
func (r BeginParams) next(s Snapshot, c *Charge) decline.Next {
	n := decline.Next{At: s.Now, Network: decline.ParseNetwork(c.Card.Network), Expiry: c.Card.Expiry(),
		PaymentMethod: c.PaymentMethod, Currency: c.Currency}
	if c.ReattemptOf != "" {
		n.Chain = c.Chain
		n.ChainHistory = without(s.Card.Chain, c.ID)
		if n.ChainHistory == nil {
			n.ChainHistory = decline.History{}
		}
	}
	return n
}

// history returns the card's history the rules decide on for charge own (nil: a new one),
// without own's attempt. It reports false when that needs the card's whole history: own's
// attempt is folded into the card's compact state, which cannot give it back.
func (r BeginParams) history(s Snapshot, own *Charge) (decline.History, bool) {
	cs := s.Card
	if cs.Clean {
		return nil, true
	}
	if (cs.Stale || own != nil && own.CardAt != nil && !cs.Through.Before(decline.Attempt{At: *own.CardAt, Charge: own.ID})) && !cs.Full {
		return nil, false
	}
	ownID := ""
	if own != nil {
		ownID = own.ID
	}
	return without(decline.Ordered(append(append(decline.History(nil), cs.Compact...), cs.Recent...)), ownID), true
}

// fold returns the card's new state once this admission's history is read: the settled
// attempts after the card's checkpoint folded into its compact part, up to the first that
// is not settled (or own's, whose attempt the plan writes anew); nil when nothing changes.
func (r BeginParams) fold(s Snapshot, own string) *CardStateWrite {
	cs := s.Card
	if cs.Clean || r.Card == nil {
		return nil
	}
	base, through := cs.Compact, cs.Through
	if cs.Full {
		base, through = nil, decline.Checkpoint{}
	}
	var folded decline.History
	for _, a := range cs.Recent {
		if a.Charge == own || !decline.Settled(a, s.Now) {
			break
		}
		folded = append(folded, a)
	}
	if len(folded) == 0 && !cs.Full {
		return nil
	}
	if len(folded) > 0 {
		through = decline.Of(folded[len(folded)-1])
	}
	return &CardStateWrite{Account: r.New.ProcessorAccount, Fingerprint: r.Card.Fingerprint,
		Compact: decline.Compact(append(append(decline.History(nil), base...), folded...), s.Now), Through: through,
		Version: cs.Version}
}

// decision is the record of the network rules' verdict v on charge c (admitted: chargeID).
func (r BeginParams) decision(s Snapshot, c *Charge, v decline.Verdict, chargeID string) *Decision {
	return &Decision{At: s.Now, Account: r.New.ProcessorAccount, Card: *c.Card, MerchantID: r.MerchantID,
		ChargeID: chargeID, Chain: c.Chain, ReattemptOf: c.ReattemptOf, Verdict: v}
}

// without returns h without the attempt of charge id.
func without(h decline.History, id string) decline.History {
	if id == "" {
		return h
	}
	var out decline.History
	for _, a := range h {
		if a.Charge != id {
			out = append(out, a)
		}
	}
	return out
}
