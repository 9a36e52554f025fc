package event

import (
	"context"
	"encoding/json"
	"time"
)

// Store is what events and their delivery need from the database (a *store.DB).
type Store interface {
	// EventByID returns the merchant's event id, or ErrNotFound.
	EventByID(ctx context.Context, merchantID, id string) (Event, error)
	// EndpointByID returns the merchant's endpoint, deleted ones included (DeletedAt set),
	// or ErrNotFound.
	EndpointByID(ctx context.Context, merchantID, id string) (*Endpoint, error)
	// RecordDelivery records a try and what it means for its endpoint: a delivery clears
	// its failing_since, a failure sets it if unset, and a failure when the endpoint has
	// been failing for at least disableAfter disables it with the reason. It returns the
	// try's number and whether the endpoint is disabled now.
	RecordDelivery(ctx context.Context, d Delivery, disableAfter time.Duration) (attempt int, disabled bool, err error)
	// Tries counts the tries of delivering eventID to endpointID made since since.
	Tries(ctx context.Context, eventID, endpointID string, since time.Time) (int, error)
	// DispatchFrom returns how far the dispatcher has looked and the database's time now.
	DispatchFrom(ctx context.Context) (watermark, now time.Time, err error)
	// NewDeliveries returns, for every event created in [from, to) of a merchant with live
	// endpoints, each live endpoint that subscribes to it and existed when it happened.
	// It reads the charges created since from less window, the charges whose key lock
	// ends after from, and the audit entries made since from.
	NewDeliveries(ctx context.Context, from, to time.Time, window time.Duration) ([]Due, error)
	// AdvanceDispatch moves the dispatcher's watermark to to, never back.
	AdvanceDispatch(ctx context.Context, to time.Time) error
}

// Renderer returns the merchant's charge as GET /v1/charges/{id} shows it to a checkout:
// an event's data.object.
type Renderer func(ctx context.Context, merchantID, chargeID string) (json.RawMessage, error)

// Due is a delivery to enqueue: an event and an endpoint.
type Due struct {
	Event      Event
	EndpointID string
}

// Delivery is one try to deliver an event to an endpoint.
type Delivery struct {
	EventID    string     `json:"-"`
	EndpointID string     `json:"endpoint"`
	Attempt    int        `json:"attempt"`
	At         time.Time  `json:"at"`
	HTTPStatus int        `json:"http_status"` // 0: no answer
	DurationMS int64      `json:"duration_ms"`
	Error      string     `json:"error"`
	Delivered  bool       `json:"delivered"`
	NextRetry  *time.Time `json:"next_retry_at"`
}
