package api

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/paygate/paygate/apikey"
)

// Authenticator finds the principal of a key hash; it returns an error wrapping
// apikey.ErrUnknownKey when no live key has that hash.
type Authenticator interface {
	Authenticate(ctx context.Context, h apikey.Hash) (apikey.Principal, error)
}

const ctxPrincipal = "paygate.principal"

func principalOf(c echo.Context) (apikey.Principal, bool) {
	p, ok := c.Get(ctxPrincipal).(apikey.Principal)
	return p, ok
}

// authenticate checks the Bearer key and stores its principal on the request.
func authenticate(a Authenticator) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			h := c.Request().Header.Get("Authorization")
			scheme, secret, ok := strings.Cut(h, " ")
			if !ok || !strings.EqualFold(scheme, "Bearer") {
				return errUnauthorized
			}
			hash, err := apikey.Parse(strings.TrimSpace(secret))
			if err != nil {
				return errUnauthorized
			}
			p, err := a.Authenticate(c.Request().Context(), hash)
			if errors.Is(err, apikey.ErrUnknownKey) {
				return errUnauthorized
			}
			if err != nil {
				// The key could not be checked: a database that cannot be reached says so.
				return fmt.Errorf("%w: %w", errAuthUnavailable, err)
			}
			c.Set(ctxPrincipal, p)
			return next(c)
		}
	}
}

// requireRole lets through only principals with one of roles.
func requireRole(roles ...apikey.Role) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			p, ok := principalOf(c)
			if !ok {
				return errUnauthorized
			}
			for _, r := range roles {
				if p.Role == r {
					return next(c)
				}
			}
			return errForbidden
		}
	}
}
