package api

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stripe/stripe-go/v76/webhook"
	"go.uber.org/zap"

	"github.com/paygate/paygate/processor"
	"github.com/paygate/paygate/reconcile"
)

// MaxWebhookBody is the largest event body POST /webhooks/stripe reads (64 KiB); a larger one
// is refused. Stripe's events are a few KiB.
const MaxWebhookBody = 64 << 10

// DefaultWebhookTolerance is how far a signature's timestamp may be from the gateway's clock,
// either way: Stripe's default tolerance, 5 minutes. An older delivery is a replay.
const DefaultWebhookTolerance = webhook.DefaultTolerance

// WebhookReceiver records verified processor events (a *janitor.Webhooks): seen reports an
// event id recorded before, which changes nothing.
type WebhookReceiver interface {
	Receive(ctx context.Context, e reconcile.Event) (seen bool, err error)
}

// WebhookConfig configures POST /webhooks/stripe, the processor's events in.
type WebhookConfig struct {
	// Secret is the endpoint's signing secret (STRIPE_WEBHOOK_SECRET, whsec_...). Empty: the
	// endpoint does not exist (404).
	Secret string
	// Receiver records the verified events.
	Receiver WebhookReceiver
	// Tolerance bounds the signature's age (DefaultWebhookTolerance when zero).
	Tolerance time.Duration
	// Now is the clock signatures are judged on (time.Now when nil).
	Now func() time.Time
}

// The results of a delivery, as paygate_webhook_events_total counts them.
const (
	webhookReceived  = "received"
	webhookVerified  = "verified"
	webhookRefused   = "refused"
	webhookDuplicate = "duplicate"
)

// Refusals of a delivery: 400, and nothing changes.
var (
	errSignatureMissing = invalid("signature_missing", "Stripe-Signature",
		"the Stripe-Signature header is required: the signature authenticates the event")
	errSignatureInvalid = invalid("signature_invalid", "Stripe-Signature",
		"no signature of the Stripe-Signature header matches the body under this endpoint's secret")
	errSignatureExpired = invalid("signature_expired", "Stripe-Signature",
		"the signature's timestamp is more than 5 minutes from now: a replayed or delayed delivery is refused")
	errWebhookTooLarge = invalid("body_too_large", "", "the event body exceeds 64 KiB")
	errEventInvalid    = invalid("invalid_event", "", "the body is not a processor event with an id and a type, or its payment_intent is malformed")
)

// webhookHandler serves POST /webhooks/stripe.
type webhookHandler struct {
	cfg    WebhookConfig
	log    *zap.Logger
	events *prometheus.CounterVec
}

// registerWebhooks adds POST /webhooks/stripe when a secret and a receiver are configured. It
// takes no API key: the signature is the authentication.
func registerWebhooks(e *echo.Echo, cfg WebhookConfig, reg prometheus.Registerer, log *zap.Logger) {
	if cfg.Secret == "" || cfg.Receiver == nil {
		return
	}
	if cfg.Tolerance <= 0 {
		cfg.Tolerance = DefaultWebhookTolerance
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	h := &webhookHandler{cfg: cfg, log: log.Named("webhooks"), events: prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "paygate", Name: "webhook_events_total",
		Help: "Deliveries to POST /webhooks/stripe by result: received (every delivery), verified (its signature holds), refused (400), duplicate (an event id seen before).",
	}, []string{"result"})}
	for _, r := range []string{webhookReceived, webhookVerified, webhookRefused, webhookDuplicate} {
		h.events.WithLabelValues(r)
	}
	reg.MustRegister(h.events)
	e.POST("/webhooks/stripe", h.stripe)
}

// stripe answers one delivery: 400 and nothing changes for a body over MaxWebhookBody, a
// missing or bad signature, a timestamp outside the tolerance, or a body that is no event;
// 200 for a verified event, recorded once (a seen id changes nothing). A store that cannot
// record it answers 5xx, and the processor delivers it again.
func (h *webhookHandler) stripe(c echo.Context) error {
	h.events.WithLabelValues(webhookReceived).Inc()
	body, err := io.ReadAll(io.LimitReader(c.Request().Body, MaxWebhookBody+1))
	if err != nil {
		return h.refuse(c, "unreadable", invalid("invalid_request", "", "the request body could not be read"))
	}
	if len(body) > MaxWebhookBody {
		return h.refuse(c, "too_large", errWebhookTooLarge)
	}
	e, apiErr, reason := h.verify(body, c.Request().Header.Get("Stripe-Signature"))
	if apiErr != nil {
		return h.refuse(c, reason, apiErr)
	}
	h.events.WithLabelValues(webhookVerified).Inc()
	seen, err := h.cfg.Receiver.Receive(c.Request().Context(), e)
	if err != nil {
		return err
	}
	if seen {
		h.events.WithLabelValues(webhookDuplicate).Inc()
	}
	return c.JSON(http.StatusOK, map[string]any{"received": true, "duplicate": seen})
}

// verify checks body against its Stripe-Signature header with stripe-go's webhook package and
// the endpoint's secret, then the signature's timestamp against the tolerance on the
// configured clock, and reads the event. It returns the refusal and its reason for the log
// when anything is wrong.
func (h *webhookHandler) verify(body []byte, header string) (reconcile.Event, *Error, string) {
	if strings.TrimSpace(header) == "" {
		return reconcile.Event{}, errSignatureMissing, "signature_missing"
	}
	ev, err := webhook.ConstructEventWithOptions(body, header, h.cfg.Secret, webhook.ConstructEventOptions{
		// The age is judged below on the configured clock, both ways.
		IgnoreTolerance: true,
		// Only the ids are read from the payload, and a read confirms them: the API
		// version the endpoint renders events in does not matter.
		IgnoreAPIVersionMismatch: true,
	})
	switch {
	case errors.Is(err, webhook.ErrNotSigned):
		return reconcile.Event{}, errSignatureMissing, "signature_missing"
	case errors.Is(err, webhook.ErrInvalidHeader), errors.Is(err, webhook.ErrNoValidSignature):
		return reconcile.Event{}, errSignatureInvalid, "signature_invalid"
	case err != nil:
		// The signature held: the signed body is not an event.
		return reconcile.Event{}, errEventInvalid, "invalid_event"
	}
	now := h.cfg.Now()
	at, ok := signedAt(header)
	if !ok {
		return reconcile.Event{}, errSignatureInvalid, "signature_invalid"
	}
	if d := now.Sub(at); d > h.cfg.Tolerance || d < -h.cfg.Tolerance {
		return reconcile.Event{}, errSignatureExpired, "signature_expired"
	}
	if ev.ID == "" || ev.Type == "" {
		return reconcile.Event{}, errEventInvalid, "invalid_event"
	}
	e := reconcile.Event{ID: ev.ID, Type: string(ev.Type), Created: time.Unix(ev.Created, 0).UTC(), Account: ev.Account,
		ReceivedAt: now.UTC()}
	if strings.HasPrefix(e.Type, "payment_intent.") {
		if ev.Data == nil {
			return reconcile.Event{}, errEventInvalid, "invalid_event"
		}
		if e.Intent, err = processor.IntentFromJSON(ev.Data.Raw); err != nil {
			return reconcile.Event{}, errEventInvalid, "invalid_event"
		}
	}
	return e, nil, ""
}

// signedAt returns the timestamp (t=) of a Stripe-Signature header.
func signedAt(header string) (time.Time, bool) {
	for part := range strings.SplitSeq(header, ",") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(part), "t="); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return time.Time{}, false
			}
			return time.Unix(n, 0), true
		}
	}
	return time.Time{}, false
}

// refuse answers a delivery 400, and counts and logs why (never the body).
func (h *webhookHandler) refuse(c echo.Context, reason string, e *Error) error {
	h.events.WithLabelValues(webhookRefused).Inc()
	h.log.Info("webhook delivery refused", zap.String("request_id", requestID(c)), zap.String("reason", reason))
	return e
}
