package api

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"time"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/paygate/paygate/migrations"
)

// Readiness reports whether the gateway can serve: the database answers and its schema is
// the one this binary expects.
type Readiness interface {
	Ready(ctx context.Context) error
}

func healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// readyz answers GET /readyz, which anyone may call: the reason it gives is generic
// ("database unreachable", "database schema is behind this binary"); the error itself, which
// may name the database's host, port, user and database, goes to the log only, with any
// password removed.
func readyz(r Readiness, log *zap.Logger) echo.HandlerFunc {
	return func(c echo.Context) error {
		ctx, cancel := context.WithTimeout(c.Request().Context(), 2*time.Second)
		defer cancel()
		if err := r.Ready(ctx); err != nil {
			reason := "database unreachable"
			if errors.Is(err, migrations.ErrSchemaBehind) {
				reason = "database schema is behind this binary"
			}
			log.Warn("not ready", zap.String("request_id", requestID(c)), zap.String("reason", reason),
				zap.String("error", redactPasswords(err.Error())))
			return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "reason": reason})
		}
		return c.JSON(http.StatusOK, map[string]string{"status": "ready"})
	}
}

var (
	// passwordParamRE is a password in a key=value connection string.
	passwordParamRE = regexp.MustCompile(`(?i)(password\s*=\s*)('(?:[^'\\]|\\.)*'|\S+)`)
	// userinfoRE is the user:password of a URL.
	userinfoRE = regexp.MustCompile(`(://[^:/@\s]*):[^@\s]*@`)
)

// redactPasswords removes the passwords of the connection strings and URLs in s.
func redactPasswords(s string) string {
	s = passwordParamRE.ReplaceAllString(s, "${1}REDACTED")
	return userinfoRE.ReplaceAllString(s, "${1}:REDACTED@")
}
