// Package api is paygate's HTTP interface (echo v4): the charges API for checkout services,
// the operator and auditor endpoints, health and readiness, and the request metrics. Every
// error leaves as the contract's envelope through one table from errors to answers
// (answerOf); card data is refused before anything else and never echoed. docs/design.md
// ("The HTTP interface") has the rules of reading a request.
package api
