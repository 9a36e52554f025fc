// Package idempotency owns the gateway's inbound idempotency: the Idempotency-Key header,
// the fingerprint that binds a key to the first request made with it, and the decision a
// later request with the same key gets.
//
// A request's fingerprint is its method, path and canonical JSON body (object keys sorted,
// insignificant white space dropped); headers such as Request-Timeout-Ms are not part of it.
// The first request binds its fingerprint to the key even when its answer is not stored.
// Afterwards the same key with the same fingerprint replays the stored answer byte for byte,
// or resumes the same logical operation when no final answer was stored; another fingerprint
// is refused (422 idempotency_key_reused); and a key whose first request still runs is
// refused (409 idempotency_key_in_use) until that request ends or its lock expires after a
// crash. The protocol follows the atomic phases of Stripe's design: each phase is one
// database transaction with a recovery point, and no transaction is open while the processor
// is called.
package idempotency
