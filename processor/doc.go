// Package processor is paygate's adapter to the card processor, Stripe, through stripe-go v76:
// the only package that knows Stripe's contract. It sends every write under paygate's own
// idempotency key (stripe-go's retries off), tells a request that never left from one that
// may have executed, classifies every answer with one table (ClassifyWrite, ClassifyRead,
// which paygate simulate uses too), reads PaymentIntents for reconciliation, watches the
// processor's account (AccountWatch), and owns the 24 h rule of a key (KeyWindow).
// docs/retry.md has the table.
package processor
