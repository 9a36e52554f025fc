package reconcile

// Due is a charge whose next reconciliation check is due.
type Due struct {
	ChargeID   string
	MerchantID string
}
