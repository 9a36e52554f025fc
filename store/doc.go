// Package store is paygate's store of record on PostgreSQL (pgx v5): the SQL of the domain's
// data. It holds no rules: it reads what its callers' decisions need (a charge's snapshot, a
// check's standing) under the right locks, applies the plans they decided with static
// statements, and implements the interfaces they declare (charge.Store, reconcile.Store, ...).
// Errors are translated at this boundary (ErrNotFound, ErrConflict, ErrUnavailable); time
// that matters for correctness is the database's clock. Only cmd/paygate imports it.
package store
