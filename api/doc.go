// Package api is paygate's HTTP interface (echo v4): the charges API for checkout services,
// the operator and auditor endpoints, health, readiness and metrics.
//
// Every error leaves through one table in the HTTPErrorHandler as the contract's envelope
// {"error": {"type", "code", "message", "param"}}; no request shape produces a 500. Request
// logs carry the request id, merchant, route, status and latency, never headers or bodies.
package api
