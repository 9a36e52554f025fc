// Package processor is paygate's adapter to the card processor, Stripe, through stripe-go
// v76: the only package that knows Stripe's contract.
//
// It sends every write under paygate's own idempotency key (stripe-go's own retries are off:
// the retry loop of package retry is the one retry layer), tells a request that never left
// from one that may have reached the processor (net/http/httptrace: a dial failure or a
// failed write is "not sent"; anything after the request was written may have executed,
// including Go's transport re-sending a request on a fresh connection after a reused one
// failed), and classifies every answer into the retry loop's classes:
//
//	evidence                                         class
//	dial refused, DNS, write failed                  not_sent
//	timeout / connection lost after the write        outcome_unknown (same key; pending if unsettled)
//	Idempotent-Replayed: true                        a stored result: success, decline or stored_result
//	Stripe-Should-Retry: true / false                overrides the status code (never the
//	                                                 evidence that our key executed)
//	409 (idempotency_key_in_use), 429 lock_timeout   busy (same key, short wait)
//	429 rate_limit                                   retry_after
//	502, 504 / 503                                   retry (may have executed / answered before execution)
//	500, 424 on the keyed write                      unknown_final (pending, reconcile); 424 is
//	                                                 Stripe's failed external dependency
//	402 card_error                                   decline
//	401, 403 (our own key refused)                   retry (nothing ran: a processor outage
//	                                                 for the caller, never an invalid request)
//	400 idempotency_error, other 4xx                 terminal
//	non-JSON body                                    outcome_unknown for writes, retry for reads
//	200 succeeded / processing, requires_action /    success / unknown_final (pending) /
//	    requires_payment_method + card_error /       decline /
//	    requires_payment_method + another error /    unknown_final (no decline) /
//	    canceled                                     terminal (failed)
//	written twice (transport re-send), then any      the answer's class, marked may have
//	    answer but a PaymentIntent or a decline      executed (the first write may have)
//
// AccountWatch follows the account the processor states (GET /v1/account): the processor
// behind the API base may change account while paygate runs. The Client tells it of every
// request that failed without an answer (OnConnectionFailure), after which it reads the
// account again; Confirm reads it again unless a read succeeded within seconds.
//
// stripe-go v76 has no fields for network_decline_code, network_advice_code and advice_code:
// they are read from the raw JSON of the error. stripe-go's leveled logger is bridged to zap
// with secrets redacted and response bodies never logged.
package processor
