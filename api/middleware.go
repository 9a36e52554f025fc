package api

import (
	"strconv"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/internal/randid"
)

const ctxRequestID = "paygate.request_id"

func requestID(c echo.Context) string {
	id, _ := c.Get(ctxRequestID).(string)
	return id
}

// withRequestID gives every request an id, echoed in the Request-Id header.
func withRequestID(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		id := newRequestID()
		c.Set(ctxRequestID, id)
		c.Response().Header().Set("Request-Id", id)
		return next(c)
	}
}

// newRequestID returns a new request id: "req_" and 26 random characters of the lowercase
// RFC 4648 base32 alphabet (128 bits and more), as strings.ToLower(rand.Text()) spells
// them, built in one allocation.
func newRequestID() string { return randid.New("req_") }

// refuseCardQuery refuses a request whose query string holds a card number in a parameter's
// name or value, before any handler can echo the parameter in an error. Every pair is read,
// those a malformed escape or a ';' makes url.ParseQuery drop included, each escape that
// can be decoded decoded.
func refuseCardQuery(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		for name, value := range queryPairs(c.Request().URL.RawQuery) {
			if charge.ContainsCardNumber(unescapeQueryLeniently(name)) || charge.ContainsCardNumber(unescapeQueryLeniently(value)) {
				return errCardData
			}
		}
		return next(c)
	}
}

// withAccessLog logs one line per request: request id, merchant, route, status, latency.
// Headers and bodies are never logged: they carry keys and card-adjacent data.
func withAccessLog(log *zap.Logger) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			start := time.Now()
			err := next(c)
			if err != nil {
				c.Error(err) // writes the envelope so that the status below is the one sent
			}
			fields := make([]zap.Field, 0, 7)
			fields = append(fields,
				zap.String("request_id", requestID(c)),
				zap.String("method", c.Request().Method),
				zap.String("route", routeOf(c)),
				zap.Int("status", c.Response().Status),
				zap.Float64("latency_ms", float64(time.Since(start).Microseconds())/1000))
			if p, ok := principalOf(c); ok {
				fields = append(fields, zap.String("merchant_id", p.MerchantID), zap.String("key_id", p.KeyID))
			}
			log.Info("request", fields...)
			return nil
		}
	}
}

func routeOf(c echo.Context) string {
	if p := c.Path(); p != "" {
		return p
	}
	return "unmatched"
}

// httpMetrics are the request metrics of the API.
type httpMetrics struct {
	duration *prometheus.HistogramVec
}

func newHTTPMetrics(reg prometheus.Registerer) *httpMetrics {
	m := &httpMetrics{
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "paygate",
			Subsystem: "http",
			Name:      "request_duration_seconds",
			Help:      "HTTP requests by route, method and status, with their latency.",
			Buckets:   []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"route", "method", "status"}),
	}
	reg.MustRegister(m.duration)
	return m
}

func (m *httpMetrics) middleware(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		if err != nil {
			c.Error(err)
		}
		m.duration.WithLabelValues(routeOf(c), c.Request().Method, strconv.Itoa(c.Response().Status)).
			Observe(time.Since(start).Seconds())
		return nil
	}
}
