package api

import (
	"context"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/paygate/paygate/apikey"
	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/console"
)

// Charges is what the charges API needs from the charge engine.
type Charges interface {
	Create(ctx context.Context, p charge.CreateParams) (charge.Response, error)
	Get(ctx context.Context, merchantID, id string) (*charge.Charge, error)
	List(ctx context.Context, p charge.ListParams) ([]charge.Charge, bool, error)
	Reattempt(ctx context.Context, p charge.ReattemptParams) (charge.Response, error)
}

// Config is what the HTTP interface is built from.
type Config struct {
	Log     *zap.Logger
	Auth    Authenticator
	Ready   Readiness
	Charges Charges
	Jobs    DeadLetters
	Review  Review
	Recon   Reconciler
	Reports Reports
	Limits  charge.Limits
	// Unavailable reports an error that says the database cannot be reached now
	// (store.Unavailable): every request that met one is answered 503 database_unavailable.
	Unavailable func(error) bool
	// Registry is where the API registers its request metrics. They are not served here:
	// serve publishes them on a listener of their own (PAYGATE_METRICS_ADDR).
	Registry *prometheus.Registry
	// Events serves the merchant's events and webhook endpoints; without a store there are
	// no such routes.
	Events EventsConfig
	// Webhooks configures POST /webhooks/stripe; without a secret there is no such route.
	Webhooks WebhookConfig
}

// New returns the gateway's HTTP handler.
func New(cfg Config) *echo.Echo {
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	e := echo.New()
	e.HideBanner = true
	e.HidePort = true
	e.HTTPErrorHandler = errorHandler(cfg.Log, cfg.Unavailable)
	metrics := newHTTPMetrics(cfg.Registry)
	e.Use(withRequestID, metrics.middleware, withAccessLog(cfg.Log))
	e.Use(middleware.RecoverWithConfig(middleware.RecoverConfig{DisableStackAll: true, DisablePrintStack: true}))

	e.GET("/healthz", healthz)
	e.GET("/readyz", readyz(cfg.Ready, cfg.Log))
	// The OpenAPI document of this API, public like the API's shape itself.
	e.GET("/v1/openapi.yaml", openAPIDocument)

	v1 := e.Group("/v1", refuseCardQuery, authenticate(cfg.Auth))
	h := &chargeHandlers{charges: cfg.Charges, limits: cfg.Limits, log: cfg.Log, review: cfg.Review}
	checkout := requireRole(apikey.RoleCheckout)
	limit := middleware.BodyLimit("64K")
	v1.POST("/charges", h.create, checkout, limit)
	anyRole := requireRole(apikey.RoleCheckout, apikey.RoleOperator, apikey.RoleAuditor)
	v1.GET("/key", currentKey, anyRole)
	v1.GET("/charges", h.list, anyRole)
	v1.GET("/charges/:id", h.get, anyRole)
	v1.POST("/charges/:id/reattempt", h.reattempt, checkout, limit)
	// Operators and auditors read the review queue and the reports; only operators act.
	readers := requireRole(apikey.RoleOperator, apikey.RoleAuditor)
	v1.GET("/reports/reattempts", reattemptReport(cfg.Reports), readers)
	operator := requireRole(apikey.RoleOperator)
	jh := &jobHandlers{jobs: cfg.Jobs}
	v1.GET("/jobs/dead", jh.dead, operator)
	v1.POST("/jobs/:id/replay", jh.replay, operator)
	rh := &reviewHandlers{charges: cfg.Charges, review: cfg.Review, recon: cfg.Recon}
	v1.GET("/review", rh.queue, readers)
	v1.POST("/charges/:id/reconcile", rh.reconcileNow, operator)
	v1.POST("/charges/:id/resolve", rh.resolve, operator, limit)

	// The merchant's events, and where they are delivered.
	if cfg.Events.Store != nil {
		eh := &eventHandlers{cfg: cfg.Events, charges: cfg.Charges, review: cfg.Review}
		v1.GET("/events", eh.list, anyRole)
		v1.GET("/events/:id", eh.get, anyRole)
		v1.POST("/webhook_endpoints", eh.createEndpoint, operator, limit)
		v1.GET("/webhook_endpoints", eh.listEndpoints, readers)
		v1.GET("/webhook_endpoints/:id", eh.getEndpoint, readers)
		v1.DELETE("/webhook_endpoints/:id", eh.deleteEndpoint, operator)
		v1.POST("/webhook_endpoints/:id/rotate", eh.rotateSecret, operator, limit)
	}

	// The processor's events: signed, not keyed.
	registerWebhooks(e, cfg.Webhooks, cfg.Registry, cfg.Log)

	// The operator console: static pages that call the API with the operator's key.
	e.Any("/ops*", echo.WrapHandler(console.Handler()))
	e.RouteNotFound("/*", func(echo.Context) error { return errNotFound })
	return e
}
