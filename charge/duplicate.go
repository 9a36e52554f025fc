package charge

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/paygate/paygate/decline"
)

// ReasonPossibleDuplicate is the review reason of a charge the issuer declined as a
// duplicate of a transaction it saw very recently (Stripe's duplicate_transaction): the
// order may already be paid by an earlier charge, and a person confirms which.
const ReasonPossibleDuplicate = "possible_duplicate_payment"

// FirstPaymentWindow is how far back before a possible duplicate an earlier payment on the
// same card is taken for the first payment of its order.
const FirstPaymentWindow = 24 * time.Hour

// maxFirstPayments bounds the earlier payments a review names.
const maxFirstPayments = 10

// Payment is an earlier charge on a card, as a possible duplicate's review names it.
type Payment struct {
	ChargeID   string    `json:"charge"`
	MerchantID string    `json:"-"`
	Amount     int64     `json:"amount"`
	Currency   string    `json:"currency"`
	Status     Status    `json:"status"`
	CreatedAt  time.Time `json:"created"`
}

// PaymentsQuery names the earlier charges on a card a possible duplicate's review reads:
// those recorded at the card's account in [From, To), but the charge itself.
type PaymentsQuery struct {
	Account     string
	Fingerprint string
	From, To    time.Time
	Except      string
}

// Review is a charge's entry into the review queue, decided with its outcome.
type Review struct {
	Reason   string
	Evidence json.RawMessage
}

// duplicateEvidence is the evidence of a possible duplicate's review.
type duplicateEvidence struct {
	// Rule says which earlier charges are taken for the first payment.
	Rule string `json:"rule"`
	// FirstPayments are those charges, newest first; empty when the card has none here.
	FirstPayments []Payment `json:"likely_first_payments"`
	// Unread says the earlier charges could not be read: a person looks them up.
	Unread bool `json:"first_payments_unread,omitempty"`
}

// PossibleDuplicateQuery returns what PossibleDuplicate reads for charge c declined with
// hold at at: nil when the decline is no possible duplicate, or c has no card.
func PossibleDuplicateQuery(c *Charge, hold decline.Hold, at time.Time) *PaymentsQuery {
	if hold != decline.HoldNoReattempt || c.Card == nil || c.Card.Fingerprint == "" {
		return nil
	}
	return &PaymentsQuery{Account: c.ProcessorAccount, Fingerprint: c.Card.Fingerprint,
		From: at.Add(-FirstPaymentWindow), To: at, Except: c.ID}
}

// PossibleDuplicate returns the review a charge c declined with hold enters: for a possible
// duplicate (decline.HoldNoReattempt), the queue with the earlier charges that may be the
// order's first payment — the same merchant's charges on the same card, of the same amount
// and currency, that succeeded or whose outcome is not known yet, newest first. It returns
// nil for any other decline. It is pure: earlier is what the store read for
// PossibleDuplicateQuery, and read false says it could not be read (the charge still goes to
// review).
func PossibleDuplicate(c *Charge, hold decline.Hold, earlier []Payment, read bool) *Review {
	if hold != decline.HoldNoReattempt {
		return nil
	}
	ev := duplicateEvidence{FirstPayments: []Payment{}, Unread: !read,
		Rule: "the merchant's charges on the same card, of the same amount and currency, succeeded or not settled, in the 24 hours before"}
	for _, p := range earlier {
		if p.ChargeID == c.ID || p.MerchantID != c.MerchantID || p.Amount != c.Amount || p.Currency != c.Currency {
			continue
		}
		if p.Status != StatusSucceeded && p.Status != StatusPending && p.Status != StatusProcessing {
			continue
		}
		ev.FirstPayments = append(ev.FirstPayments, p)
	}
	slices.SortStableFunc(ev.FirstPayments, func(a, b Payment) int { return b.CreatedAt.Compare(a.CreatedAt) })
	if len(ev.FirstPayments) > maxFirstPayments {
		ev.FirstPayments = ev.FirstPayments[:maxFirstPayments]
	}
	body, _ := json.Marshal(ev) // only marshalable fields
	return &Review{Reason: ReasonPossibleDuplicate, Evidence: body}
}
