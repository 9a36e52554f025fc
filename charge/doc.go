// Package charge owns the logical charge operation: its types, the rules a new charge must
// meet, and the engine that carries one charge from its request to a stored outcome.
//
// A charge is written, with its processor idempotency key ("pg_" + its id), before the first
// processor call; every processor attempt runs under that key. The outcome is one of
// succeeded, declined, pending (the processor may hold an effect that no answer settled:
// resolved later by reconciliation, never by a second charge) or failed (no attempt can have
// reached the processor, or the processor refused the request as invalid). Uncertainty is
// sticky: once an attempt may have reached the processor, nothing that happens afterwards
// turns the charge into failed.
package charge
