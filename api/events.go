package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/paygate/paygate/apikey"
	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/event"
)

// Events is what the events and webhook endpoints API reads and writes (a *store.DB).
type Events interface {
	EventByID(ctx context.Context, merchantID, id string) (event.Event, error)
	Events(ctx context.Context, p event.ListParams) ([]event.Event, bool, error)
	Deliveries(ctx context.Context, merchantID, eventID string) ([]event.Delivery, error)
	CreateEndpoint(ctx context.Context, e *event.Endpoint) error
	EndpointByID(ctx context.Context, merchantID, id string) (*event.Endpoint, error)
	Endpoints(ctx context.Context, merchantID string) ([]*event.Endpoint, error)
	DeleteEndpoint(ctx context.Context, merchantID, id string) (*event.Endpoint, error)
	RotateSecret(ctx context.Context, merchantID, id, secret string, overlap time.Duration) (*event.Endpoint, error)
}

// EventsConfig configures the events API.
type EventsConfig struct {
	Store Events
	// AllowHTTP allows http:// endpoints to loopback addresses (PAYGATE_WEBHOOK_ALLOW_HTTP=1).
	AllowHTTP bool
	// Resolve resolves endpoint hosts at registration (nil: the system resolver).
	Resolve event.Resolver
}

type eventHandlers struct {
	cfg     EventsConfig
	charges Charges
	review  Review
}

// ChargeObject returns the renderer of events' data.object: the charge as GET
// /v1/charges/{id} shows it to the merchant's checkout key.
func ChargeObject(charges Charges, review Review) event.Renderer {
	h := &chargeHandlers{charges: charges, review: review}
	return func(ctx context.Context, merchantID, chargeID string) (json.RawMessage, error) {
		v, err := h.detail(ctx, apikey.Principal{MerchantID: merchantID, Role: apikey.RoleCheckout}, chargeID)
		if err != nil {
			return nil, err
		}
		return json.Marshal(v)
	}
}

// eventJSON is an event as the API shows it.
type eventJSON struct {
	ID         string            `json:"id"`
	Object     string            `json:"object"`
	Type       event.Type        `json:"type"`
	Created    int64             `json:"created"`
	Data       eventData         `json:"data"`
	Deliveries *[]event.Delivery `json:"deliveries,omitempty"` // set for GET /v1/events/{id} only
}

type eventData struct {
	Object json.RawMessage `json:"object"`
}

func (h *eventHandlers) view(ctx context.Context, e event.Event) (eventJSON, error) {
	obj, err := ChargeObject(h.charges, h.review)(ctx, e.MerchantID, e.ChargeID)
	if err != nil {
		return eventJSON{}, err
	}
	return eventJSON{ID: e.ID, Object: "event", Type: e.Type, Created: e.Created.Unix(), Data: eventData{Object: obj}}, nil
}

var errEventCursorMissing = &Error{Status: http.StatusNotFound, Type: typeInvalidRequest, Code: "resource_missing",
	Param: "starting_after", Message: "no such event: starting_after must name one of your events"}

// list answers GET /v1/events?type=&charge=&starting_after=&limit=: the merchant's events,
// newest first.
func (h *eventHandlers) list(c echo.Context) error {
	p, _ := principalOf(c)
	q, apiErr := queryParams(c)
	if apiErr != nil {
		return apiErr
	}
	for k := range q {
		if k != "type" && k != "limit" && k != "starting_after" && k != "charge" {
			return invalid("parameter_unknown", k, "unknown parameter "+strconvQuote(k))
		}
	}
	ctx := c.Request().Context()
	lp := event.ListParams{MerchantID: p.MerchantID, Limit: 10}
	if t := q.Get("type"); t != "" {
		if !event.Type(t).Valid() {
			return invalid(charge.CodeParameterInvalid, "type", "type must be one of "+typeList())
		}
		lp.Type = event.Type(t)
	}
	if ch := q.Get("charge"); ch != "" {
		if !chargeIDRE.MatchString(ch) {
			return invalid(charge.CodeParameterInvalid, "charge", "charge must be a charge id (ch_...)")
		}
		lp.ChargeID = ch
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 100 {
			return invalid(charge.CodeParameterInvalid, "limit", "limit must be an integer from 1 to 100")
		}
		lp.Limit = n
	}
	if s := q.Get("starting_after"); s != "" {
		if _, _, ok := event.ParseID(s); !ok {
			return invalid(charge.CodeParameterInvalid, "starting_after", "starting_after must be an event id (evt_...)")
		}
		e, err := h.cfg.Store.EventByID(ctx, p.MerchantID, s)
		if errors.Is(err, event.ErrNotFound) {
			return errEventCursorMissing
		}
		if err != nil {
			return err
		}
		lp.After = &e
	}
	list, more, err := h.cfg.Store.Events(ctx, lp)
	if err != nil {
		return err
	}
	data := make([]eventJSON, 0, len(list))
	for _, e := range list {
		v, err := h.view(ctx, e)
		if err != nil {
			return err
		}
		data = append(data, v)
	}
	return c.JSON(http.StatusOK, map[string]any{"object": "list", "url": "/v1/events", "has_more": more, "data": data})
}

// get answers GET /v1/events/{id}: the event with its delivery attempts, oldest first.
func (h *eventHandlers) get(c echo.Context) error {
	p, _ := principalOf(c)
	ctx := c.Request().Context()
	id := c.Param("id")
	if _, _, ok := event.ParseID(id); !ok {
		return errNotFound
	}
	e, err := h.cfg.Store.EventByID(ctx, p.MerchantID, id)
	if err != nil {
		return err
	}
	v, err := h.view(ctx, e)
	if err != nil {
		return err
	}
	dl, err := h.cfg.Store.Deliveries(ctx, p.MerchantID, e.ID)
	if err != nil {
		return err
	}
	if dl == nil {
		dl = []event.Delivery{}
	}
	v.Deliveries = &dl
	return c.JSON(http.StatusOK, v)
}

func typeList() string {
	names := make([]string, 0, len(event.Types))
	for _, t := range event.Types {
		names = append(names, string(t))
	}
	return strings.Join(names, ", ")
}

// endpointJSON is a webhook endpoint as the API shows it; Secret only in the answers that
// make one (creation, rotation).
type endpointJSON struct {
	ID             string       `json:"id"`
	Object         string       `json:"object"`
	URL            string       `json:"url"`
	Events         []event.Type `json:"events"`
	Created        int64        `json:"created"`
	Status         string       `json:"status"`
	FailingSince   *time.Time   `json:"failing_since"`
	DisabledAt     *time.Time   `json:"disabled_at"`
	DisabledReason *string      `json:"disabled_reason"`
	Secret         string       `json:"secret,omitempty"`
	// PreviousSecretExpires is when the secret a rotation replaced stops signing.
	PreviousSecretExpires *time.Time `json:"previous_secret_expires_at,omitempty"`
}

func endpointView(e *event.Endpoint, now time.Time) endpointJSON {
	v := endpointJSON{ID: e.ID, Object: "webhook_endpoint", URL: e.URL, Events: e.Events, Created: e.CreatedAt.Unix(),
		Status: e.State(), FailingSince: utc(e.FailingSince), DisabledAt: utc(e.DisabledAt),
		DisabledReason: optional(e.DisabledReason)}
	if e.PreviousExpiresAt != nil && now.Before(*e.PreviousExpiresAt) {
		v.PreviousSecretExpires = utc(e.PreviousExpiresAt)
	}
	return v
}

func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

type endpointBody struct {
	URL    *string   `json:"url"`
	Events *[]string `json:"events"`
}

// createEndpoint answers POST /v1/webhook_endpoints {"url", "events"} (operators): the new
// endpoint with its signing secret, answered this once.
func (h *eventHandlers) createEndpoint(c echo.Context) error {
	p, _ := principalOf(c)
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var b endpointBody
	if apiErr := decodeStrict(body, &b); apiErr != nil {
		return apiErr
	}
	if b.URL == nil || *b.URL == "" {
		return invalid(charge.CodeParameterMissing, "url", "url is required")
	}
	if charge.ContainsCardNumber(*b.URL) {
		return invalid(charge.CodeCardData, "url", "card data is not accepted")
	}
	if b.Events == nil || len(*b.Events) == 0 {
		return invalid(charge.CodeParameterMissing, "events", `events is required: a list of event types, or ["*"] for all`)
	}
	types, apiErr := eventTypes(*b.Events)
	if apiErr != nil {
		return apiErr
	}
	ctx := c.Request().Context()
	if err := event.CheckURL(ctx, *b.URL, h.cfg.AllowHTTP, h.cfg.Resolve); err != nil {
		var uerr *event.URLError
		if errors.As(err, &uerr) {
			return invalid(uerr.Code, "url", uerr.Message)
		}
		return err
	}
	e := &event.Endpoint{ID: event.NewEndpointID(), MerchantID: p.MerchantID, URL: *b.URL, Events: types,
		Secret: event.NewSecret()}
	if err := h.cfg.Store.CreateEndpoint(ctx, e); err != nil {
		return err
	}
	v := endpointView(e, time.Now())
	v.Secret = e.Secret
	return c.JSON(http.StatusOK, v)
}

// maxEndpointTypes bounds the list of an endpoint's events.
const maxEndpointTypes = 16

// eventTypes reads an endpoint's list of event types: known types, each once, or "*" alone
// for every type.
func eventTypes(list []string) ([]event.Type, *Error) {
	if len(list) > maxEndpointTypes {
		return nil, invalid(charge.CodeParameterInvalid, "events", "events lists at most 16 types")
	}
	if len(list) == 1 && list[0] == "*" {
		return append([]event.Type(nil), event.Types...), nil
	}
	out := make([]event.Type, 0, len(list))
	for i, s := range list {
		t := event.Type(s)
		param := "events[" + strconv.Itoa(i) + "]"
		if !t.Valid() {
			return nil, invalid(charge.CodeParameterInvalid, param, `each event must be one of `+typeList()+`, or ["*"] alone`)
		}
		for _, seen := range out {
			if seen == t {
				return nil, invalid("duplicate_parameter", param, "events lists "+s+" twice")
			}
		}
		out = append(out, t)
	}
	return out, nil
}

var errEndpointMissing = &Error{Status: http.StatusNotFound, Type: typeInvalidRequest, Code: "resource_missing",
	Message: "no such webhook endpoint"}

func endpointID(c echo.Context) (string, *Error) {
	id := c.Param("id")
	if !strings.HasPrefix(id, "we_") || len(id) > 64 {
		return "", errEndpointMissing
	}
	return id, nil
}

// listEndpoints answers GET /v1/webhook_endpoints: the merchant's endpoints, newest first.
func (h *eventHandlers) listEndpoints(c echo.Context) error {
	p, _ := principalOf(c)
	q, apiErr := queryParams(c)
	if apiErr != nil {
		return apiErr
	}
	for k := range q {
		return invalid("parameter_unknown", k, "unknown parameter "+strconvQuote(k))
	}
	list, err := h.cfg.Store.Endpoints(c.Request().Context(), p.MerchantID)
	if err != nil {
		return err
	}
	now := time.Now()
	data := make([]endpointJSON, 0, len(list))
	for _, e := range list {
		data = append(data, endpointView(e, now))
	}
	return c.JSON(http.StatusOK, map[string]any{"object": "list", "url": "/v1/webhook_endpoints", "has_more": false, "data": data})
}

// getEndpoint answers GET /v1/webhook_endpoints/{id}.
func (h *eventHandlers) getEndpoint(c echo.Context) error {
	p, _ := principalOf(c)
	id, apiErr := endpointID(c)
	if apiErr != nil {
		return apiErr
	}
	e, err := h.cfg.Store.EndpointByID(c.Request().Context(), p.MerchantID, id)
	if errors.Is(err, event.ErrNotFound) || err == nil && e.DeletedAt != nil {
		return errEndpointMissing
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, endpointView(e, time.Now()))
}

// deleteEndpoint answers DELETE /v1/webhook_endpoints/{id} (operators): nothing more is
// delivered to it.
func (h *eventHandlers) deleteEndpoint(c echo.Context) error {
	p, _ := principalOf(c)
	id, apiErr := endpointID(c)
	if apiErr != nil {
		return apiErr
	}
	e, err := h.cfg.Store.DeleteEndpoint(c.Request().Context(), p.MerchantID, id)
	if errors.Is(err, event.ErrNotFound) {
		return errEndpointMissing
	}
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, map[string]any{"id": e.ID, "object": "webhook_endpoint", "deleted": true})
}

// rotateSecret answers POST /v1/webhook_endpoints/{id}/rotate (operators): a new signing
// secret, answered this once; the one it replaces keeps signing for 24 h.
func (h *eventHandlers) rotateSecret(c echo.Context) error {
	p, _ := principalOf(c)
	id, apiErr := endpointID(c)
	if apiErr != nil {
		return apiErr
	}
	secret := event.NewSecret()
	e, err := h.cfg.Store.RotateSecret(c.Request().Context(), p.MerchantID, id, secret, event.RotationOverlap)
	if errors.Is(err, event.ErrNotFound) {
		return errEndpointMissing
	}
	if err != nil {
		return err
	}
	v := endpointView(e, time.Now())
	v.Secret = secret
	return c.JSON(http.StatusOK, v)
}
