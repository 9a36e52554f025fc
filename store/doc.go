// Package store is paygate's store of record on PostgreSQL (pgx v5). All SQL of the
// project lives here.
//
// The store imports the domain packages (charge, apikey, ...) and persists their types; the
// domain packages never import the store: each declares the few methods it needs as a
// small interface, and cmd/paygate wires a *DB into them.
//
// Every state change runs in one transaction. Most go through InTx, which retries
// serialization failures (SQLSTATE 40001) and deadlocks (40P01). The charge path that runs on
// every request is shorter: a new key's first phase is a transaction pipelined in one batch
// when the card's history holds only approvals, or in two (BEGIN travels with the first
// statements, COMMIT with the last; retried like InTx), and an outcome is one statement. Those statements are assembled from the parts each charge
// needs, with named arguments numbered once per variant. Errors that callers inspect are
// translated at this boundary into the sentinels ErrNotFound and ErrConflict.
//
// Time that matters for correctness (the 24 h rule, network caps, lock expiry) is read from
// the database clock, never from the application host.
package store
