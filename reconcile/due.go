package reconcile

// Due is a charge whose next reconciliation check is due.
type Due struct {
	ChargeID   string
	MerchantID string
	// Account is the processor account the charge was sent to; empty when none is recorded.
	Account string
	// RefKnown reports that an answer gave the charge's PaymentIntent id: its check retrieves
	// it. A charge without one is checked by a sweep of its account.
	RefKnown bool
}

// Swept reports whether the charge is checked by a sweep of its account (its PaymentIntent
// id is unknown) rather than by a check of its own.
func (d Due) Swept() bool { return d.Account != "" && !d.RefKnown }
