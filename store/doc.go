// Package store is paygate's store of record on PostgreSQL (pgx v5). All SQL of the
// project lives here.
//
// The store imports the domain packages (charge, apikey, ...) and persists their types; the
// domain packages never import the store: each declares the few methods it needs as a
// small interface, and cmd/paygate wires a *DB into them.
//
// Every state change runs in one transaction, retried on serialization failures (SQLSTATE
// 40001) and deadlocks (40P01): through InTx, or, for the charge path that runs on every
// request, as one statement (the outcome) or as a transaction pipelined in two batches (a new
// key's first phase: BEGIN travels with the first statements, COMMIT with the last). The hot
// path's statements are assembled from the parts each charge needs, with named arguments
// numbered once per variant. Errors that callers inspect are translated at this boundary
// into the sentinels ErrNotFound and ErrConflict.
//
// Time that matters for correctness (the 24 h rule, network caps, lock expiry) is read from
// the database clock, never from the application host.
package store
