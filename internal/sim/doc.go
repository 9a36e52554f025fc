// Package sim is the processor simulator of `paygate sim` and `make run`: enough of Stripe's
// API, in Stripe's wire format, that stripe-go v76 works against it unchanged — payment
// intents, payment methods, the account, Stripe's idempotency, list and search — with
// Stripe's test payment methods and paygate's own (pm_sim_...) deciding outcomes, and, not
// part of Stripe, scripted and random faults, webhooks and a ledger of effects per
// idempotency key. Everything lives in memory. The reference is docs/simulators.md.
package sim
