package api

import (
	"context"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
)

// Readiness reports whether the gateway can serve: the database answers and its schema is
// the one this binary expects.
type Readiness interface {
	Ready(ctx context.Context) error
}

func healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

func readyz(r Readiness) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
		defer cancel()
		if err := r.Ready(ctx); err != nil {
			return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": err.Error()})
		}
		return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
	}
}
