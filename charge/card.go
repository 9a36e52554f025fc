package charge

import (
	"context"
	"fmt"
	"time"

	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/processor"
)

// Card is the card a charge is made on, as the network rules know it: its fingerprint at
// the processor account, its network and its expiry.
type Card struct {
	Fingerprint string
	Network     string
	ExpMonth    int
	ExpYear     int
}

// Expiry returns the card's expiry for the decline rules.
func (c Card) Expiry() decline.Expiry { return decline.Expiry{Year: c.ExpYear, Month: c.ExpMonth} }

// Cards reads the card behind a payment method (GET /v1/payment_methods/{id}: a read, never
// an attempt).
type Cards interface {
	Card(ctx context.Context, paymentMethod string) (processor.Card, error)
}

// CachedCards is a Cards that keeps the cards it read: the engine asks it first, and reads
// the payment method (under a deadline of its own) only when it has not.
type CachedCards interface {
	CachedCard(paymentMethod string) (processor.Card, bool)
}

// CodeCardUnavailable is the failure code of a charge whose card could not be read before
// its first attempt (the processor is unreachable): nothing was charged, and a retry with the
// same key reads the card again.
const CodeCardUnavailable = "processor_unavailable"

// ReattemptRefusedError is returned by Create when the card network rules (or the decline
// schedule) forbid charging the card now. No attempt was made at the processor.
type ReattemptRefusedError struct {
	Verdict decline.Verdict
}

// Error says why the rules refused the attempt, and from when it would be allowed.
func (e *ReattemptRefusedError) Error() string {
	if e.Verdict.NotBefore.IsZero() {
		return fmt.Sprintf("charge: reattempt not allowed: %s", e.Verdict.Reason)
	}
	return fmt.Sprintf("charge: reattempt not allowed: %s before %s", e.Verdict.Reason, e.Verdict.NotBefore.Format(time.RFC3339))
}

// NoCardAttempt is the Outcome of a CardOutcome that removes the charge's attempt from the
// card's history: nothing reached the card network (a failed charge, or one waiting for the
// cardholder's authentication).
const NoCardAttempt decline.Outcome = "none"

// CardOutcome is what an attempt's outcome means for the card's history.
type CardOutcome struct {
	Outcome    decline.Outcome
	Class      decline.Class
	Category   decline.Category
	MAC        decline.MAC
	CapReached bool
	// Hold is the decline's hold (decline.Classification.Hold), kept with the card's
	// attempt beside its class: the network rules read it with the attempt's payment
	// method and currency.
	Hold decline.Hold
}
