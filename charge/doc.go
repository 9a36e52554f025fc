// Package charge owns the logical charge: its types and statuses, the rules a new charge
// must meet, and the engine that carries it from its request to a stored outcome — the first
// phase decided on a snapshot (Begin), the retry-loop runner (LoopRunner), the completer of
// charges left mid-flight by a process that died (Completer), and the automatic reattempt
// chains (AutoChains). A charge ends succeeded, declined, pending or failed; the engine never
// turns a charge that may have reached the processor into failed (uncertainty is sticky),
// but reconciliation may, on an authoritative absence, and so may an operator.
package charge
