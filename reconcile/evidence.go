package reconcile

import (
	"slices"
	"time"

	"github.com/paygate/paygate/processor"
	"github.com/paygate/paygate/retry"
)

// Evidence is what one check found at the processor: one record per read made (nil for a
// read not made) and the answer of a replay, if one was sent. It is stored as JSON with the
// check, for the review queue and the audit trail.
type Evidence struct {
	// At is the database clock when the check started.
	At time.Time `json:"at"`
	// Account is the processor account the reads went to.
	Account string `json:"account"`
	// Retrieve is the read of the PaymentIntent named by the charge's processor_ref.
	Retrieve *Retrieval `json:"retrieve,omitempty"`
	// List is the scan of the PaymentIntents created in the charge's send window.
	List *Listing `json:"list,omitempty"`
	// Search is the metadata search for the charge id.
	Search *Search `json:"search,omitempty"`
	// Replay is the answer to a replay of the charge's request under its key.
	Replay *ReplayAnswer `json:"replay,omitempty"`
	// Event is the processor event (a verified webhook) that triggered the check, if one did.
	Event *Event `json:"event,omitempty"`
}

// Answered reports whether any read of the check (or its replay) got an answer from the
// processor: found, not found, or a page of a listing. A check whose every read failed saw
// nothing, so finding nothing in it proves nothing.
func (e Evidence) Answered() bool {
	return (e.Retrieve != nil && e.Retrieve.Failure == nil) ||
		(e.List != nil && (e.List.Pages > 0 || e.List.Failure == nil)) ||
		(e.Search != nil && e.Search.Answered) ||
		(e.Replay != nil && e.Replay.HTTPStatus != 0)
}

// ReadFailure says why a read gave no answer.
type ReadFailure struct {
	// Class is the read's classification (retry, retry_after, terminal).
	Class retry.Class `json:"class"`
	// HTTPStatus is the answer's status, 0 when none came.
	HTTPStatus int `json:"http_status,omitempty"`
	// Code is the processor's error code, or the network failure (timeout, ...).
	Code string `json:"code,omitempty"`
	// RequestID is the processor's Request-Id, when an answer came.
	RequestID string `json:"request_id,omitempty"`
}

// Retrieval is the read of one PaymentIntent by id.
type Retrieval struct {
	// ID is the PaymentIntent id read.
	ID string `json:"id"`
	// Intent is the PaymentIntent, when found.
	Intent *processor.Intent `json:"intent,omitempty"`
	// NotFound is the processor's definite answer that no such PaymentIntent exists.
	NotFound bool `json:"not_found,omitempty"`
	// Failure is set when the read gave no answer.
	Failure *ReadFailure `json:"failure,omitempty"`
}

// Listing is a scan of the PaymentIntents created in a window, page by page.
type Listing struct {
	// From and To bound the window (created times, both included).
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Pages is the number of pages read; Scanned the PaymentIntents on them.
	Pages   int `json:"pages"`
	Scanned int `json:"scanned"`
	// Complete reports that every page of the window was read: Intents then holds every
	// PaymentIntent of the window that carries the charge id.
	Complete bool `json:"complete"`
	// Intents are the PaymentIntents of the window that carry the charge id.
	Intents []processor.Intent `json:"intents,omitempty"`
	// Failure is set when a page gave no answer (the scan stopped there).
	Failure *ReadFailure `json:"failure,omitempty"`
	// Sweep is set when the listing is a sweep's: one pass over the send windows of many
	// charges, of which From and To are this charge's.
	Sweep *SweptSpan `json:"sweep,omitempty"`
}

// SweptSpan is the list pass of a sweep a listing comes from: the created times it read (the
// union of the send windows of the charges it checked together), how many charges it
// checked, whether it read every page, and why it stopped when it did not.
type SweptSpan struct {
	From     time.Time    `json:"from"`
	To       time.Time    `json:"to"`
	Charges  int          `json:"charges"`
	Complete bool         `json:"complete"`
	Failure  *ReadFailure `json:"failure,omitempty"`
}

// emptyOver reports whether the listing is an observation of absence over [from, to]: the
// whole of a window covering it was read, after its end, and no PaymentIntent carries the
// charge id.
func (l *Listing) emptyOver(from, to, at time.Time) bool {
	return l != nil && l.Complete && l.Failure == nil && len(l.Intents) == 0 &&
		!l.From.After(from) && !l.To.Before(to) && !at.Before(l.To)
}

// Search is the metadata search for the charge id.
type Search struct {
	// Answered reports that the search was answered (found or not).
	Answered bool `json:"answered"`
	// Intents are the PaymentIntents found carrying the charge id.
	Intents []processor.Intent `json:"intents,omitempty"`
	// MayLag reports an empty answer while the search index may not show the charge yet:
	// no proof of anything.
	MayLag bool `json:"may_lag,omitempty"`
	// Failure is set when the search gave no answer.
	Failure *ReadFailure `json:"failure,omitempty"`
}

// ReplayAnswer is the processor's answer to a replay of the charge's request under its key.
type ReplayAnswer struct {
	// Class is the answer's classification, as for any write.
	Class retry.Class `json:"class"`
	// HTTPStatus is the answer's status, 0 when none came.
	HTTPStatus int `json:"http_status,omitempty"`
	// Code is the processor's error or decline code.
	Code string `json:"code,omitempty"`
	// PaymentIntent and Status are the PaymentIntent the answer carried, if any.
	PaymentIntent string `json:"payment_intent,omitempty"`
	Status        string `json:"status,omitempty"`
	// Replayed reports that the processor answered with the result stored for the key.
	Replayed bool `json:"replayed,omitempty"`
	// Decline is the issuer's evidence for a decline.
	Decline *processor.Decline `json:"decline,omitempty"`
	// RequestID is the processor's Request-Id of the answer.
	RequestID string `json:"request_id,omitempty"`
}

// ReplayAnswerOf records a processor attempt as a replay's answer.
func ReplayAnswerOf(a processor.Attempt) *ReplayAnswer {
	return &ReplayAnswer{
		Class:         a.Outcome.Class,
		HTTPStatus:    a.Outcome.HTTPStatus,
		Code:          a.Outcome.ProcessorCode,
		PaymentIntent: a.PaymentIntent,
		Status:        a.Status,
		Replayed:      a.Replayed,
		Decline:       a.Decline,
		RequestID:     a.RequestID,
	}
}

func failureOf(r processor.ReadResult) *ReadFailure {
	return &ReadFailure{Class: r.Outcome.Class, HTTPStatus: r.Outcome.HTTPStatus,
		Code: r.Outcome.ProcessorCode, RequestID: r.RequestID}
}

// sighting is one PaymentIntent the reads found for a charge, with the first read that found
// it (retrieve before list before search).
type sighting struct {
	intent processor.Intent
	path   Path
}

// sightings returns the distinct PaymentIntents the reads found for charge id, in the order
// of the reads: the one named by processor_ref (whatever its metadata says), then those of
// the list and the search that carry the charge id.
func (e Evidence) sightings(chargeID string) []sighting {
	var out []sighting
	add := func(in processor.Intent, p Path) {
		if slices.ContainsFunc(out, func(s sighting) bool { return s.intent.ID == in.ID }) {
			return
		}
		out = append(out, sighting{intent: in, path: p})
	}
	if e.Retrieve != nil && e.Retrieve.Intent != nil {
		add(*e.Retrieve.Intent, PathRetrieve)
	}
	if e.List != nil {
		for _, in := range e.List.Intents {
			if in.ChargeID == chargeID {
				add(in, PathList)
			}
		}
	}
	if e.Search != nil {
		for _, in := range e.Search.Intents {
			if in.ChargeID == chargeID {
				add(in, PathSearch)
			}
		}
	}
	return out
}

// sawPaymentIntent reports whether the evidence shows any PaymentIntent for the charge,
// a replay's included.
func (e Evidence) sawPaymentIntent(chargeID string) bool {
	return len(e.sightings(chargeID)) > 0 || (e.Replay != nil && e.Replay.PaymentIntent != "")
}
