// Package sim is a payments processor simulator. It speaks Stripe's wire
// format closely enough that stripe-go v76, pointed at it, cannot tell it from
// Stripe for what paygate uses, and it injects the faults Stripe never shows
// on demand: errors before execution, lost answers, refused and silent
// connections.
//
// # Running it
//
// A Server is an http.Handler. Serve runs it on a listener until a context
// ends:
//
//	s := sim.New(sim.Config{Logger: logger.Named("sim")})
//	err := s.Serve(ctx, ln)
//
// stripe-go is pointed at it with its own retries off:
//
//	backend := stripe.GetBackendWithConfig(stripe.APIBackend, &stripe.BackendConfig{
//		URL:               stripe.String("http://127.0.0.1:12111"),
//		MaxNetworkRetries: stripe.Int64(0),
//	})
//	intents := paymentintent.Client{B: backend, Key: "sk_test_anything"}
//
// Everything lives in memory and is lost on exit. Memory is bounded: stored
// idempotent answers expire after Config.KeyTTL (24 h), and PaymentIntents,
// keys and ledger entries are capped (Config.MaxPaymentIntents and friends,
// 100,000 each by default; the oldest go first). Unless Config.AccountID is
// set, every Server has a new random account id ("acct_sim..."), so a
// restarted simulator never passes for the one that held earlier
// PaymentIntents. Config.Now injects the clock used for created times, search
// lag, processing time and key expiry.
//
// # API
//
// Every request needs a test mode key: "Authorization: Bearer sk_test_..."
// (or rk_test_...; curl -u sk_test_...: works too). Any well-formed test key
// is accepted unless Config.SecretKey names the only one. A missing or
// malformed key is answered 401 invalid_request_error, as by Stripe; live keys
// are always refused; keys are never logged. A Stripe-Account header naming
// another account is answered 403 account_invalid.
//
//	POST /v1/payment_intents         create; with confirm=true, charge
//	GET  /v1/payment_intents/{id}    retrieve
//	GET  /v1/payment_intents         list, newest first
//	GET  /v1/payment_intents/search  search by metadata, status, ...
//	GET  /v1/payment_methods/{id}    the card behind a payment method
//	GET  /v1/account                 the account (also GET /v1/accounts/{own id})
//
// Requests are form encoded as stripe-go sends them: metadata[charge_id]=...,
// payment_method_types[0]=card (or payment_method_types[]=card),
// expand[0]=latest_charge, created[gte]=1700000000. Create takes amount
// (50 to 99999999 minor units), currency, payment_method,
// payment_method_types, confirm, error_on_requires_action, off_session,
// customer, metadata (at most 50 keys of 40 characters, values of 500),
// description, setup_future_usage, return_url and expand; Stripe's other create
// parameters are accepted and ignored, unknown ones are answered 400
// parameter_unknown, a missing amount or currency 400 parameter_missing, an
// unknown payment method 400 resource_missing (param payment_method).
// Card details (payment_method_data) are refused: only payment method ids
// enter the simulator.
//
// Retrieve, list and search take expand[] of latest_charge (a charge with
// outcome and payment_method_details.card), payment_method and customer
// (data.latest_charge ... for list and search). List takes created (exact) or
// created[gt|gte|lt|lte], customer, limit (1 to 100, default 10),
// starting_after and ending_before, and answers {"object": "list", "data",
// "has_more", "url"}; it is consistent at once.
//
// For example:
//
//	curl localhost:12111/v1/payment_intents -u sk_test_x: \
//	     -H 'Idempotency-Key: pg_ch_123' \
//	     -d amount=1999 -d currency=usd -d confirm=true \
//	     -d payment_method=pm_sim_decline_insufficient_funds_visa_51 \
//	     -d 'metadata[charge_id]=ch_123'
//	curl localhost:12111/v1/payment_methods/pm_card_visa -u sk_test_x:
//	curl -g 'localhost:12111/v1/payment_intents?limit=3&created[gte]=1700000000' -u sk_test_x:
//	curl localhost:12111/v1/payment_intents/search -u sk_test_x: -G \
//	     --data-urlencode "query=metadata['charge_id']:'ch_123'"
//
// Every answer carries a Request-Id header (req_...) and echoes the
// Idempotency-Key header. Errors use Stripe's envelope:
//
//	{"error": {"type": "...", "code": "...", "decline_code": "...", "message": "...",
//	           "param": "...", "doc_url": "...", "payment_intent": {...}, ...}}
//
// Differences from Stripe worth knowing: a PaymentIntent keeps the payment
// method id it was given (Stripe turns a pm_card_... test id into a new pm_...
// id per use); only capture_method automatic exists; no customers, refunds or
// captures; the account is a fixed test account.
//
// # Outcomes
//
// The payment method decides the outcome of a confirmed PaymentIntent.
// Stripe's test ids work as at Stripe:
//
//	pm_card_visa, pm_card_visa_debit, pm_card_mastercard,
//	pm_card_mastercard_debit, pm_card_mastercard_prepaid, pm_card_amex,
//	pm_card_discover, pm_card_diners, pm_card_jcb, pm_card_unionpay, pm_card_us   succeeded
//	pm_card_chargeDeclined (and pm_card_visa_chargeDeclined)                      generic_decline
//	pm_card_[visa_]chargeDeclinedInsufficientFunds                                insufficient_funds
//	pm_card_[visa_]chargeDeclinedLostCard                                         lost_card
//	pm_card_[visa_]chargeDeclinedStolenCard                                       stolen_card
//	pm_card_[visa_]chargeDeclinedExpiredCard                                      expired_card
//	pm_card_[visa_]chargeDeclinedIncorrectCvc                                     incorrect_cvc
//	pm_card_[visa_]chargeDeclinedProcessingError                                  processing_error
//	pm_card_[visa_]chargeDeclinedVelocityLimitExceeded                            card_velocity_exceeded
//	pm_card_[visa_]chargeDeclinedFraudulent, pm_card_radarBlock                   fraudulent
//	pm_card_chargeCustomerFail                                                    generic_decline
//	pm_card_threeDSecure2Required, pm_card_threeDSecureRequired,
//	pm_card_authenticationRequired,
//	pm_card_authenticationRequiredChargeDeclinedInsufficientFunds                 needs 3D Secure
//	pm_card_authenticationRequiredOnSetup                                         needs 3D Secure on session only
//
// Simulator ids reach every decline code and the network fields:
//
//	pm_sim_<outcome>[_<modifier>]...
//
// where outcome is one of
//
//	approve                      succeeded
//	decline_<code>               declined with decline_code <code> (any lower-case code;
//	                             card_decline_rate_limit_exceeded is a card error code
//	                             Stripe sends without a decline_code)
//	requires_action              needs 3D Secure (its own card: see cardN)
//	processing                   processing, succeeded after Config.ProcessingTime
//	processing_decline_<code>    processing, then declined with <code>
//
// and the modifiers, in any order, are
//
//	visa | mc | mastercard | amex | discover
//	                the card brand (default visa); a brand may be followed by a
//	                two-character network decline code: visa_05, visa_N7, mc_51
//	macNN           Mastercard Merchant Advice Code NN (mac01, mac03, mac24);
//	                implies mastercard
//	cardN           card number N of the brand (default: the brand's standard
//	                test card, the one pm_card_visa, pm_card_mastercard, ...
//	                use; for requires_action a card of its own, on Visa
//	                Stripe's 3D Secure card ...3184 of
//	                pm_card_authenticationRequired); other numbers have other
//	                fingerprints, last4 N
//	expMMYY         expiry (default 12/2034); the fingerprint stays the same
//	firstN          the outcome applies to the first N confirmations with this
//	                exact id; later ones succeed (a card that recovers)
//	advice_<code>   Stripe advice_code (try_again_later, do_not_try_again,
//	                confirm_card_data); must come last
//
// For example:
//
//	pm_sim_decline_do_not_honor_visa_05                  Visa 05, generic
//	pm_sim_decline_lost_card_visa_41                     Visa 41, category 1
//	pm_sim_decline_insufficient_funds_visa_51_first2     declines twice, then approves
//	pm_sim_decline_do_not_try_again_mc_mac03             Mastercard MAC 03
//	pm_sim_decline_insufficient_funds_mc_51_mac24        Mastercard 51 with MAC 24
//	pm_sim_decline_expired_card_visa_54_card7            card 7 expired; pm_sim_approve_visa_card7_exp0130
//	                                                     is the same card with a new expiry
//	pm_sim_decline_try_again_later_advice_try_again_later
//	pm_sim_decline_generic_decline_advice_do_not_try_again
//	pm_sim_decline_pin_try_exceeded_visa_75              Visa 75, category 2: another card
//	pm_sim_decline_do_not_honor_visa_5C                  Visa 5C (also 9G, 83: Visa's own codes)
//	pm_sim_decline_card_decline_rate_limit_exceeded      code card_decline_rate_limit_exceeded,
//	                                                     no decline_code
//
// A decline is answered 402 with type card_error, code card_declined (or, as
// at Stripe, the decline code itself for expired_card, incorrect_cvc,
// incorrect_number, incorrect_address, processing_error,
// authentication_required and a few more), decline_code, message, charge,
// payment_method, and payment_intent:
// the PaymentIntent in status requires_payment_method with
// last_payment_error. When set, network_decline_code, network_advice_code and
// advice_code appear in the error, in last_payment_error and in
// latest_charge.outcome; stripe-go v76 does not decode these newer fields:
// read them from the raw JSON (Error.LastResponse.RawJSON).
//
// A card needing 3D Secure leaves the PaymentIntent in requires_action when
// confirmed on session without error_on_requires_action: 200, no charge yet,
// and next_action redirect_to_url (to the return_url given) or, without a
// return_url, use_stripe_sdk. Nothing completes the authentication: the
// PaymentIntent stays in requires_action. With error_on_requires_action=true
// or off_session=true the payment fails, as at Stripe, with a 402 card_error
// authentication_required (code and decline_code) and the PaymentIntent in
// requires_payment_method (except pm_card_authenticationRequiredOnSetup off
// session, which succeeds). Either answer is stored under the idempotency
// key like any other, and retrieve, list and search show the PaymentIntent
// in its status.
//
// GET /v1/payment_methods/{id} answers every id above without creating it
// first, with card.brand, last4, exp_month, exp_year, funding, networks and a
// fingerprint that depends only on the account and the card number: the same
// card under different ids (pm_card_visa, pm_sim_approve,
// pm_sim_decline_do_not_honor_visa_05, pm_sim_approve_exp0129) has one
// fingerprint, a different card (pm_card_visa_debit, ..._card2,
// pm_sim_requires_action) another.
//
// # Idempotency
//
// POSTs follow Stripe's idempotency rules. The first executed answer under an
// Idempotency-Key, whatever its status (a 402 or a stored 500 included), is
// stored with the request's parameters and answered again, byte for byte, to
// every later request with the same key and parameters for Config.KeyTTL, with
// the headers Idempotent-Replayed: true and Original-Request: <first
// request id>. The same key with other parameters (or another path) is 400
// idempotency_error ("Keys for idempotent requests can only be used with the
// same parameters they were first used with..."). The same key while the first
// request still runs is 409 invalid_request_error idempotency_key_in_use with
// Stripe-Should-Retry: true. Nothing is stored for requests answered before
// execution: validation errors (parameter_missing, parameter_unknown, ...),
// 409s, and scripted or random 429, 5xx, refusals, delays and blackholes; a
// retry with the same key then executes. Requests without a key work and store
// nothing.
//
// # Search
//
// Search takes query, limit and page and answers {"object": "search_result",
// "data", "has_more", "next_page", "url"} (total_count with
// expand[]=total_count), newest first. The query language is Stripe's, for the
// PaymentIntent fields amount, created, currency, customer, metadata and
// status:
//
//	metadata['charge_id']:'ch_123'
//	metadata["charge_id"]:"ch_123" AND status:'succeeded'
//	metadata['merchant']:'m1' OR metadata['merchant']:'m2'
//	-status:'canceled' amount>=1000 created<1700000000 metadata['x']:null
//
// Clauses are separated by spaces or AND or OR (never both), at most ten;
// strings are quoted (a backslash escapes a quote), ~ matches a substring.
// Like Stripe's, the index lags: a PaymentIntent is found only
// Config.SearchLag (default 5 s) after its creation, while retrieve and list
// see it at once.
//
// # Faults
//
// The fault controls are plain JSON under /_sim/, not part of Stripe and not
// authenticated. A script is a list of steps applied, one per request and in
// order, to the next write requests (POSTs to /v1/); reads never consume a
// step. Posting a script replaces the previous one.
//
//	curl -X POST localhost:12111/_sim/script -d '[
//	  {"status": 503},
//	  {"status": 429, "retry_after": "30"},
//	  {"delay_ms": 3000},
//	  {"drop_response": true},
//	  {"refuse": true},
//	  {"status": 500, "after_commit": true},
//	  {"blackhole": true},
//	  {"status": 402, "decline_code": "insufficient_funds", "network_decline_code": "51"},
//	  {"status": 402, "code": "card_decline_rate_limit_exceeded"},
//	  {"status": 424, "after_commit": true},
//	  {}
//	]'
//	curl localhost:12111/_sim/script                       # the steps left
//
// The steps:
//
//	{"status": N}
//	    Answer N (400-599, but 402: below) in Stripe's shape without
//	    executing; nothing is stored under the key. Defaults: 429 code
//	    rate_limit; 409 code idempotency_key_in_use with Stripe-Should-Retry:
//	    true; 424 (Stripe's failed external dependency) and 5xx type
//	    api_error. Optional: "code" (e.g. "lock_timeout", which also sends
//	    Stripe-Should-Retry: true), "message", "should_retry" (true or false:
//	    the Stripe-Should-Retry header), "retry_after" (a string or number sent
//	    verbatim as Retry-After: delta seconds, an HTTP-date, or garbage to
//	    test a client), "date" (replaces the Date header, to skew the clock
//	    a client sees). {} and {"status": 200} let the request through.
//	{"status": 402, "code", "decline_code", "network_decline_code", "advice_code", "network_advice_code"}
//	    Execute the request and decline its payment, whatever the payment
//	    method would do, with a card error of those fields (each optional):
//	    402 card_error, the PaymentIntent in requires_payment_method with them
//	    in last_payment_error and latest_charge.outcome, stored under the key
//	    and replayed like any decline. Without code nor decline_code it is
//	    Stripe's generic_decline; a decline_code alone takes Stripe's code for
//	    it (card_declined, or the decline code itself for expired_card,
//	    incorrect_cvc, ...); a code alone is a card error without a
//	    decline_code (card_decline_rate_limit_exceeded, which is also not sent
//	    to the network). "message" replaces the message; it combines with
//	    delay_ms, processing_ms and drop_response, not with after_commit. The
//	    decline fields go with status 402 only.
//	{"status": 424, "after_commit": true}
//	    Stripe's 424, an external dependency failed: api_error. Without
//	    after_commit it is answered before execution and nothing is stored;
//	    with it the request executes, then the 424 is answered and stored
//	    under the key, as a stored 500.
//	{"delay_ms": N}
//	    Wait N ms, key not held, then go on (combines with any other field).
//	    The request executes even if the client gave up meanwhile: the
//	    client saw a timeout after sending, yet the effect exists.
//	{"processing_ms": N}
//	    Hold the idempotency key N ms before executing: a retry with the
//	    same key meanwhile gets 409 idempotency_key_in_use. The effect
//	    happens even if the client left.
//	{"drop_response": true}
//	    Execute and store the answer under the key, then lose it: send the
//	    first bytes of the status line (no line end) and close the
//	    connection. The client sees its request written (httptrace
//	    WroteRequest without error), then an error wrapping
//	    io.ErrUnexpectedEOF ("net/http: HTTP/1.x transport connection broken:
//	    unexpected EOF"); curl says "Empty reply from server". A retry with
//	    the same key gets the stored answer with Idempotent-Replayed: true. A
//	    replayed answer is lost the same way. The few bytes sent keep Go's
//	    http.Transport from silently resending the request over a reused
//	    connection.
//	{"refuse": true}
//	    Reset the connection (TCP RST) without executing or answering:
//	    nothing happened, no key is held. The simulator reads the request
//	    body first, so the client always sees the same thing: its request
//	    written (httptrace WroteRequest without error), then "connection
//	    reset by peer" (syscall.ECONNRESET) while waiting for the answer.
//	    Like a real reset, this cannot tell the client that nothing
//	    happened. Over a reused keep-alive connection Go's http.Transport
//	    resends such a request by itself on a new connection (stripe-go
//	    sets an Idempotency-Key and a rewindable body): the resend is the
//	    next write request and takes the next step, so the client sees the
//	    reset only when that resend fails too, or on a fresh connection. A
//	    refusal before anything is sent (connection refused, WroteRequest
//	    with an error) cannot be produced reliably by a listening server:
//	    test it against a closed port.
//	{"status": 500, "after_commit": true}
//	    Execute, then answer the status (default 500) instead of the real
//	    answer and store it under the key, as Stripe stores a 500: retries
//	    with the key get the same 500, replayed. The effect exists: find it
//	    by retrieve, list or search.
//	{"blackhole": true}
//	    Read the request, never execute it, never answer. The connection is
//	    held until the client goes away (it sees its own timeout, e.g.
//	    context.DeadlineExceeded, after WroteRequest), POST /_sim/reset, or
//	    Server.Close; then it is closed unanswered. Nothing exists and the
//	    key is free.
//
// Random faults apply to every API request no step covers:
//
//	curl -X POST localhost:12111/_sim/faults \
//	     -d '{"error_rate": 0.1, "latency_ms": 20, "status": 503, "seed": 42}'
//	curl -X POST localhost:12111/_sim/faults -d '{}'     # off
//
// error_rate (0 to 1) is the probability that a write request is answered
// status (default 503; optional "retry_after") before execution;
// "include_reads": true extends it to GETs. latency_ms delays every API
// request, reads included, outside the idempotency layer. "seed" reseeds the
// random source (Config.Seed seeds it at start), so a run repeats.
//
// # Ledger
//
// The ledger proves one effect per logical operation. It lists, oldest
// first, one entry per idempotency key seen on POST /v1/payment_intents (and
// one per keyless request that executed):
//
//	curl localhost:12111/_sim/ledger
//	curl 'localhost:12111/_sim/ledger?idempotency_key=pg_ch_123'
//
//	{"object": "list", "account": "acct_sim...", "total_effects": 1, "max_effects_per_key": 1,
//	 "data": [{"idempotency_key": "pg_ch_123",
//	           "requests": 3,            every POST with the key, faulted ones included
//	           "executions": 1,          times the endpoint ran
//	           "replays": 1,             stored answers sent again
//	           "effects": 1,             PaymentIntents created under the key
//	           "payment_intent": "pi_...", "payment_intents": ["pi_..."],
//	           "amount": 1999, "currency": "usd", "payment_method": "pm_card_visa",
//	           "customer": "cus_...", "metadata": {"charge_id": "ch_123"},
//	           "status": "succeeded",   the PaymentIntent's status now
//	           "first_seen": 1700000000, "last_seen": 1700000003}]}
//
// Entries outlive their keys: a key reused after its TTL shows 2 effects.
// POST /_sim/reset forgets PaymentIntents, keys, the ledger, the script and the
// random faults, and closes held connections. GET /_sim/stats counts what is
// held in memory. The same controls exist as methods: SetScript, Script,
// SetFaults, Faults, Ledger, Reset, Stats.
package sim
