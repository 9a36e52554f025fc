package event

import (
	"encoding/json"
	"errors"
	"strings"
	"time"
)

// Type is the type of an event.
type Type string

// The types of events.
const (
	ChargeSucceeded          Type = "charge.succeeded"
	ChargeDeclined           Type = "charge.declined"
	ChargeFailed             Type = "charge.failed"
	ChargePending            Type = "charge.pending"
	ChargeReviewRequired     Type = "charge.review_required"
	ChargeReattemptScheduled Type = "charge.reattempt_scheduled"
	ChargeResolved           Type = "charge.resolved"
)

// Types are every type of event, in the order the documentation lists them.
var Types = []Type{ChargeSucceeded, ChargeDeclined, ChargeFailed, ChargePending, ChargeReviewRequired,
	ChargeReattemptScheduled, ChargeResolved}

// Valid reports whether t is a type of event.
func (t Type) Valid() bool {
	for _, v := range Types {
		if t == v {
			return true
		}
	}
	return false
}

// Event is an event as it is read: what happened to which charge, and when.
type Event struct {
	ID         string
	Type       Type
	Created    time.Time
	MerchantID string
	ChargeID   string
}

// ListParams selects a page of a merchant's events, newest first.
type ListParams struct {
	MerchantID string
	Type       Type   // empty: every type
	ChargeID   string // empty: every charge's
	// After, when set, is the event the page starts after.
	After *Event
	Limit int
}

// ErrNotFound is returned for an event, an endpoint or a delivery that does not exist (or is
// another merchant's).
var ErrNotFound = errors.New("event: not found")

// idPrefix begins every event id.
const idPrefix = "evt_"

// ID returns the id of the event of transition key of charge chargeID: "evt_", the charge
// id without its "ch_", "_" and the key ("o": the first outcome, "s": a scheduled reattempt,
// a number: the audit trail's entry). The same change always has the same id.
func ID(chargeID, key string) string {
	return idPrefix + strings.TrimPrefix(chargeID, "ch_") + "_" + key
}

// ParseID returns the charge and the transition key an event id names; ok is false for a
// string that is no event id.
func ParseID(id string) (chargeID, key string, ok bool) {
	rest, found := strings.CutPrefix(id, idPrefix)
	if !found {
		return "", "", false
	}
	i := strings.LastIndexByte(rest, '_')
	if i <= 0 || i == len(rest)-1 {
		return "", "", false
	}
	ch, key := rest[:i], rest[i+1:]
	for _, r := range ch {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') {
			return "", "", false
		}
	}
	if key != "o" && key != "s" {
		for _, r := range key {
			if r < '0' || r > '9' {
				return "", "", false
			}
		}
		if len(key) > 19 {
			return "", "", false
		}
	}
	return "ch_" + ch, key, true
}

// Body is the JSON of event e whose charge renders as object: {"id", "object": "event",
// "type", "created", "data": {"object": ...}}.
func Body(e Event, object json.RawMessage) ([]byte, error) {
	return json.Marshal(bodyJSON{ID: e.ID, Object: "event", Type: e.Type, Created: e.Created.Unix(),
		Data: dataJSON{Object: object}})
}

type bodyJSON struct {
	ID      string   `json:"id"`
	Object  string   `json:"object"`
	Type    Type     `json:"type"`
	Created int64    `json:"created"`
	Data    dataJSON `json:"data"`
}

type dataJSON struct {
	Object json.RawMessage `json:"object"`
}
