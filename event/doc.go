// Package event owns the events a merchant's checkout hears about its charges and their
// signed delivery to the merchant's webhook endpoints.
//
// An event is a change of a charge that a merchant cares about (Type). It is not written on
// its own: the store reads it from what the change already wrote, the charge's row or its
// audit trail, with an id derived from the charge and the transition (ID), so that an event
// exists exactly when its change committed. A Dispatcher looks for the events written since
// it last looked, for the merchants that have endpoints, and enqueues one delivery job per
// event and endpoint (unique, so that a look over the same events again enqueues nothing
// twice). A delivery POSTs the event signed with the endpoint's secret (Sign) and is retried
// with the retry package's capped full-jitter backoff, honouring Retry-After, for three days
// (Schedule); then it is a dead letter. The URL rules (CheckURL, Dialer) keep deliveries off
// private addresses. Package verify is the receiver's side.
//
// docs/events.md explains the events, the signature and the retry schedule.
package event
