// Package reconcile resolves charges whose outcome is unknown — pending charges: an attempt
// may have reached the processor and no answer under the charge's key settled it (a timeout
// after the request was written, a dropped answer, a 500 on the keyed write, a PaymentIntent
// left processing). Such a charge ends resolved by what the processor says, never by
// charging again.
//
// # Reads first
//
// One check of a charge reads, in order, and stops at the first that finds its PaymentIntent:
//
//	retrieve   GET /v1/payment_intents/{processor_ref}, when an answer gave the id
//	list       the PaymentIntents created in the send window (earliest possible send less a
//	           margin for clock skew, to the last send plus a margin for late execution),
//	           page by page, matched by paygate's charge id in the metadata; consistent at once
//	search     metadata['paygate_charge_id']:'ch_...'; lags by seconds to minutes (up to an
//	           hour in incidents), so it can find but never disprove
//
// Only the processor account recorded on the charge is queried: a Reconciler confirms the
// account it talks to with the processor before each check's reads (Accounts: the processor
// behind the configured API base may change account while paygate runs) and sends a charge of
// another account to review without a read; it confirms it again before the decision, and a
// check whose account cannot be confirmed, or changed meanwhile, records nothing.
// Retrieve and list calls share one rate limiter, search calls another (Stripe's live limits
// are 100 reads and 20 searches per second), so reconciliation never starves charges.
//
// A replay of the key is a write. CanReplay allows it only inside the 24 h rule (no write
// under a key after its first send + 23 h, database clock; the first send counts from the
// charge's creation when first_sent_at is later, since a send whose process died before
// recording it leaves first_sent_at to a resumed run), only for a key the processor may
// have seen (an attempt was written in full), only at the charge's account and never for a
// charge an operator resolved; the replay sends the persisted request under the same key.
// A Reconciler with a Replayer replays only when the reads found nothing.
//
// # The decision
//
// Decide is pure: a charge, the evidence of one check and the earlier checks in, a Decision
// out. A PaymentIntent found must match the charge's amount, currency, customer, payment
// method and metadata, else it is conflicting evidence; two PaymentIntents carrying the
// charge id are conflicting evidence too. The charge's PaymentIntent settles it: succeeded,
// or declined with the last_payment_error's evidence (which feeds the decline rules like a
// direct decline); processing and requires_action leave it pending. Every resolution records
// its path (retrieve, list, search, replay, absence) and the evidence.
//
// The model is Kill Bill's payment janitor (IncompletePaymentTransactionTask): UNKNOWN and
// PENDING payments are re-checked on a schedule and never failed automatically; an unknown
// stays unknown rather than be guessed. Checks run at +30 s, 5 min, 1 h, then daily for 7
// days from the first send (Schedule, configurable: "30s,5m,1h,1d*7"); a charge still
// unresolved after the last goes to review. The one automatic failed is the authoritative
// absence: the list over the send window, read in full, found no PaymentIntent for the
// charge twice, at least an hour apart, both after the 24 h rule closed the key — and no
// check ever saw a PaymentIntent for it. Between the key's closing and that second list the
// charge is in review (key closed, no evidence) while the checks go on.
//
// Review also takes conflicting evidence, a PaymentIntent in a state reconciliation does not
// settle (canceled), a charge of another account, and processor evidence that contradicts
// an operator's manual resolution (which reopens the charge at the top of the queue). The
// reopening ends the manual resolution: the charge is pending again, first in the queue until
// a check's evidence or an operator resolves it. A check that ran while an operator resolved
// the charge is recorded against that resolution (AgainstManual), never over it.
//
// # Recording
//
// A Reconciler records each check through a Store, one transaction per check: the check
// (number, time, decision, evidence) is appended to the charge's trail with the change it
// makes (Resolve, Reschedule, ToReview). Check numbers are recorded once per charge, so
// reconcilers racing for one charge resolve it once; the loser gets ErrStale. The durable
// scheduling (one job per charge at Decision.NextCheckAt) belongs to the job queue.
package reconcile
