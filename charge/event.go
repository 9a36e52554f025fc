package charge

import (
	"encoding/json"
	"time"
)

// Event is one entry of a charge's audit trail: who changed what, when, why, and on what
// evidence.
type Event struct {
	At           time.Time       `json:"at"`
	Actor        string          `json:"actor"`
	Action       string          `json:"action"`
	Reason       string          `json:"reason,omitempty"`
	StatusBefore string          `json:"status_before,omitempty"`
	StatusAfter  string          `json:"status_after,omitempty"`
	Note         string          `json:"note,omitempty"`
	Evidence     json.RawMessage `json:"evidence,omitempty"`
}

// Live reports whether a charge in status s holds its reference and its place in its
// reattempt chain: processing, pending or succeeded.
func (s Status) Live() bool {
	return s == StatusProcessing || s == StatusPending || s == StatusSucceeded
}

// Duplicates names the live charges a charge brought back to life duplicates: the one that
// holds its reference, and the one of its reattempt chain (empty: none).
type Duplicates struct {
	Reference string
	Reattempt string
}

// Revived returns the live charges charge c duplicates when a change of its status from from
// to to brings it back to life (a success found after an operator's "failed" or "declined",
// a reopening), given holders, the other live charges that hold its reference and a place in
// its chain now: two payments for one order happened. A charge already marked keeps the
// charge it names. None when the change brings nothing back to life.
func Revived(c *Charge, from, to Status, holders Duplicates) Duplicates {
	if !to.Live() || from.Live() {
		return Duplicates{}
	}
	var d Duplicates
	if c.ReferenceDuplicateOf == "" {
		d.Reference = holders.Reference
	}
	if c.ReattemptDuplicateOf == "" {
		d.Reattempt = holders.Reattempt
	}
	return d
}

// Events returns the audit trail's events of d for a charge going from before to after, by
// actor: one per live charge it duplicates, which a person must refund.
func (d Duplicates) Events(actor string, before, after Status) []Event {
	var out []Event
	if d.Reference != "" {
		out = append(out, Event{Actor: actor, Action: "duplicate_reference", StatusBefore: string(before), StatusAfter: string(after),
			Note: "the processor shows this charge alive while live charge " + d.Reference +
				" holds its reference: two payments for one order; refund one"})
	}
	if d.Reattempt != "" {
		out = append(out, Event{Actor: actor, Action: "duplicate_reattempt", StatusBefore: string(before), StatusAfter: string(after),
			Note: "this charge came back to life while charge " + d.Reattempt +
				" of its reattempt chain is live: two payments for one order; refund one"})
	}
	return out
}
