package charge

import (
	"encoding/json"
	"time"

	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/processor"
)

// DeclineJSON is the decline block of a declined charge in the API.
type DeclineJSON struct {
	Code     string        `json:"code"`
	Network  string        `json:"network"`
	Category int           `json:"category"`
	Class    decline.Class `json:"class"`
	// Hold says what the decline forbids beyond its class, or how far the class's block
	// reaches (same_payment_method, same_expiry, another_card, same_currency,
	// decline_rate_limit, possible_duplicate); absent when the class alone decides.
	Hold      decline.Hold  `json:"hold,omitempty"`
	Reattempt ReattemptJSON `json:"reattempt"`
	// Evidence holds every code the processor gave.
	Evidence *processor.Decline `json:"evidence,omitempty"`
}

// ReattemptJSON says whether the declined card may be charged again now, and if not, why
// and from when.
type ReattemptJSON struct {
	Allowed           bool       `json:"allowed"`
	NotBefore         *time.Time `json:"not_before"`
	Reason            string     `json:"reason,omitempty"`
	RemainingInWindow *int       `json:"remaining_in_window"`
}

// Classify returns the classification of the issuer's evidence on a card of network: every
// code the processor gave, its error code included (a card error may carry expired_card,
// incorrect_cvc or card_decline_rate_limit_exceeded and no decline_code).
func Classify(d *processor.Decline, network string) decline.Classification {
	if d == nil {
		d = &processor.Decline{}
	}
	return decline.Classify(decline.Evidence{
		DeclineCode:        d.DeclineCode,
		Code:               d.Code,
		AdviceCode:         d.AdviceCode,
		NetworkDeclineCode: d.NetworkDeclineCode,
		NetworkAdviceCode:  d.NetworkAdviceCode,
		Network:            decline.ParseNetwork(network),
	})
}

// cardOutcome is what a charge's outcome adds to its card's history, given the status of the
// PaymentIntent the processor last answered with (empty when none); nil for a failed charge,
// which never reached the card network.
func cardOutcome(status Status, cl decline.Classification, processorStatus string) *CardOutcome {
	switch status {
	case StatusSucceeded:
		return &CardOutcome{Outcome: decline.Approved}
	case StatusPending:
		if processorStatus == "requires_action" {
			// The PaymentIntent waits for the cardholder's authentication: no authorization
			// reached the card network, so the attempt takes no slot of the network caps.
			// Reconciliation puts it back in the card's history if the payment is
			// authorized after all.
			return &CardOutcome{Outcome: NoCardAttempt}
		}
		return &CardOutcome{Outcome: decline.Pending}
	case StatusDeclined:
		o := decline.Declined
		if cl.Blocked {
			o = decline.Blocked
		}
		return &CardOutcome{Outcome: o, Class: cl.Class, Category: cl.Category, MAC: cl.MAC, CapReached: cl.CapReached, Hold: cl.Hold}
	}
	return nil
}

// DeclineOutcome returns, for charge c found declined at now with the issuer's evidence d
// (by reconciliation, or an operator), its decline block and what the decline adds to the
// card's history. h is the card's history without c's own attempt, which the history records
// at at: the block's not_before is then the one a reattempt is refused with.
func DeclineOutcome(c *Charge, d *processor.Decline, h decline.History, at, now time.Time, caps decline.Caps) (json.RawMessage, *CardOutcome) {
	var network string
	if c.Card != nil {
		network = c.Card.Network
	}
	cl := Classify(d, network)
	co := cardOutcome(StatusDeclined, cl, "")
	blk, _ := declineBlock(c, d, cl, co, h, at, now, caps)
	return blk, co
}

// CodeDeclinedByOperator is the code of the decline block of a charge an operator resolved
// as declined: no issuer code is known.
const CodeDeclinedByOperator = "resolved_declined_by_operator"

// OperatorDecline returns, for charge c an operator resolved as declined at now, its decline
// block and what the decline adds to the card's history, as DeclineOutcome does for a
// decline without evidence; the block's code names the operator. h and at are
// DeclineOutcome's.
func OperatorDecline(c *Charge, h decline.History, at, now time.Time, caps decline.Caps) (json.RawMessage, *CardOutcome) {
	var network string
	if c.Card != nil {
		network = c.Card.Network
	}
	cl := Classify(nil, network)
	cl.Code = CodeDeclinedByOperator
	co := cardOutcome(StatusDeclined, cl, "")
	blk, _ := declineBlock(c, nil, cl, co, h, at, now, caps)
	return blk, co
}

// declineBlock renders the decline block of charge c, declined at now: the classification
// and the network rules' verdict on reattempting the card in c's chain, over the card's
// history with this decline added at the time the card's history records it (at), so that
// the block's not_before is the one a reattempt is later refused with.
func declineBlock(c *Charge, d *processor.Decline, cl decline.Classification, co *CardOutcome, h decline.History, at, now time.Time, caps decline.Caps) (json.RawMessage, decline.Verdict) {
	blk := DeclineJSON{Code: cl.Code, Network: string(cl.Network), Category: int(cl.Category), Class: cl.Class,
		Hold: cl.Hold, Evidence: d}
	// The verdict is on reattempting c's chain as it is: the same payment method, in the same
	// currency.
	next := decline.Next{At: now, Chain: c.Chain, PaymentMethod: c.PaymentMethod, Currency: c.Currency}
	if c.Card != nil {
		next.Network, next.Expiry = decline.ParseNetwork(c.Card.Network), c.Card.Expiry()
	}
	h = append(append(decline.History(nil), h...), decline.Attempt{
		Charge: c.ID, Chain: c.Chain, At: at, Outcome: co.Outcome, Class: co.Class, Network: next.Network,
		MAC: co.MAC, Expiry: next.Expiry, CapReached: co.CapReached, Hold: co.Hold,
		PaymentMethod: c.PaymentMethod, Currency: c.Currency,
	})
	v := decline.Check(h, next, caps)
	blk.Reattempt.Allowed = v.Allowed
	blk.Reattempt.Reason = string(v.Reason)
	if !v.NotBefore.IsZero() {
		nb := v.NotBefore.UTC()
		blk.Reattempt.NotBefore = &nb
	}
	if v.RemainingInWindow != decline.NoCap {
		r := v.RemainingInWindow
		blk.Reattempt.RemainingInWindow = &r
	}
	out, _ := json.Marshal(blk) // DeclineJSON holds only marshalable fields
	return out, v
}
