// Package api is paygate's HTTP interface (echo v4): the charges API for checkout services,
// the operator and auditor endpoints, health and readiness. It records request metrics in
// the registry it is given; serve publishes them on a listener of their own, never on the
// API's.
//
// Every error leaves through one table in the HTTPErrorHandler as the contract's envelope
// {"error": {"type", "code", "message", "param"}}, param always present ("" when no single
// parameter is at fault), echo's own errors included; no request shape produces a 500.
// The requests net/http refuses itself before any handler runs (a malformed escape in the
// path, a header value with a control byte) get its plain-text 400. A query string
// url.ParseQuery refuses (a malformed escape, a ';') is answered 400 parameter_invalid by
// every endpoint that reads its query, never read as absent.
// Request logs carry the request id, merchant, route, status and latency, never headers or
// bodies.
//
// Card data is refused before any other check of a request (400 card_data_not_accepted)
// and never echoed: in the query string, and anywhere in a body (every key and value of its
// token stream, and the raw text where it is not one JSON value). The Idempotency-Key is the
// caller's opaque token and is not checked: a numeric key (a timestamp in nanoseconds, an
// order number) would pass the Luhn check one time in ten. A key that holds a card number is
// shown masked but for its last four digits (charge.MaskedKey) in every charge body, stored
// answers included, and kept whole to match retries. A
// body's object that gives a key twice is refused (400 duplicate_parameter), so that no
// decoder's choice between the two values matters, and so is a string that is not valid
// UTF-8 (400 invalid_request naming the parameter), which encoding/json would read with
// U+FFFD in place of the invalid bytes.
package api
