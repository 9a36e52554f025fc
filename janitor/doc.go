// Package janitor resolves charges whose outcome is unknown, in the background, durably and
// safely with several replicas: it is paygate's payment janitor (after Kill Bill's
// IncompletePaymentTransactionTask, which re-checks UNKNOWN and PENDING payments on a
// schedule and never fails them by guesswork).
//
// A charge that ends pending enters reconciliation with its first check due shortly. A
// periodic sweep (River, run by the leader replica) enqueues one job per due charge, unique
// per charge, on the reconcile queue; each job runs one check of package reconcile — reads
// first, at the configured processor read rate — and records it with its decision in one
// transaction, numbered so that two replicas racing for one charge record one check. A
// resolved decline feeds the network caps like a direct one.
package janitor
