package api

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/store"
)

// Error types of the envelope, as Stripe names them.
const (
	typeInvalidRequest = "invalid_request_error"
	typeAuthentication = "authentication_error"
	typePermission     = "permission_error"
	typeIdempotency    = "idempotency_error"
	typeAPI            = "api_error"
)

// Error is an API error: the HTTP status and the body of the error envelope. Param names
// the parameter at fault; it is always sent, empty when no single parameter is.
type Error struct {
	Status  int            `json:"-"`
	Type    string         `json:"type"`
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Param   string         `json:"param"`
	Extra   map[string]any `json:"-"`
}

// Error returns the code and the message.
func (e *Error) Error() string { return e.Code + ": " + e.Message }

// body returns the envelope, with Extra fields beside the standard ones (which they never
// replace).
func (e *Error) body() map[string]any {
	inner := make(map[string]any, 4+len(e.Extra))
	for k, v := range e.Extra {
		inner[k] = v
	}
	inner["type"], inner["code"], inner["message"], inner["param"] = e.Type, e.Code, e.Message, e.Param
	return map[string]any{"error": inner}
}

func invalid(code, param, msg string) *Error {
	return &Error{Status: http.StatusBadRequest, Type: typeInvalidRequest, Code: code, Param: param, Message: msg}
}

var (
	errNotFound     = &Error{Status: http.StatusNotFound, Type: typeInvalidRequest, Code: "resource_missing", Message: "no such resource"}
	errUnauthorized = &Error{Status: http.StatusUnauthorized, Type: typeAuthentication, Code: "unauthorized",
		Message: "a valid API key is required: Authorization: Bearer KEY"}
	errForbidden = &Error{Status: http.StatusForbidden, Type: typePermission, Code: "forbidden",
		Message: "this API key's role may not use this endpoint"}
	errInternal = &Error{Status: http.StatusInternalServerError, Type: typeAPI, Code: "internal_error",
		Message: "an internal error occurred; the request may be retried with the same Idempotency-Key"}
	errCardData = &Error{Status: http.StatusBadRequest, Type: typeInvalidRequest, Code: charge.CodeCardData,
		Message: "card data is not accepted: send a processor payment method id (pm_...)"}
	errUnavailable = &Error{Status: http.StatusServiceUnavailable, Type: typeAPI, Code: "service_unavailable",
		Message: "the service cannot answer now; retry with the same Idempotency-Key"}
	// errDatabaseUnavailable answers any request that met a database it could not reach (a
	// restart, a refused connection): what its transactions had not committed is not written,
	// and a retry with the same Idempotency-Key resumes what was.
	errDatabaseUnavailable = &Error{Status: http.StatusServiceUnavailable, Type: typeAPI, Code: "database_unavailable",
		Message: "the database cannot be reached now; retry after Retry-After with the same Idempotency-Key"}
)

// errorHandler returns echo's HTTPErrorHandler: every error leaves as the envelope.
func errorHandler(log *zap.Logger) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		apiErr := toAPIError(err)
		if apiErr.Status >= 500 {
			log.Error("request failed", zap.String("request_id", requestID(c)), zap.String("route", c.Path()), zap.Error(err))
		}
		if apiErr.Status == http.StatusServiceUnavailable && c.Response().Header().Get("Retry-After") == "" {
			c.Response().Header().Set("Retry-After", "1")
		}
		var werr error
		if c.Request().Method == http.MethodHead {
			werr = c.NoContent(apiErr.Status)
		} else {
			werr = c.JSON(apiErr.Status, apiErr.body())
		}
		if werr != nil {
			log.Debug("writing error response", zap.Error(werr))
		}
	}
}

// toAPIError is the one table from errors to statuses.
func toAPIError(err error) *Error {
	var apiErr *Error
	if errors.As(err, &apiErr) {
		return apiErr
	}
	if store.Unavailable(err) {
		return errDatabaseUnavailable
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		switch he.Code {
		case http.StatusNotFound:
			return errNotFound
		case http.StatusMethodNotAllowed:
			return &Error{Status: he.Code, Type: typeInvalidRequest, Code: "method_not_allowed", Message: "method not allowed on this path"}
		case http.StatusRequestEntityTooLarge:
			return &Error{Status: he.Code, Type: typeInvalidRequest, Code: "body_too_large", Message: "the request body exceeds 64 KiB"}
		case http.StatusUnauthorized:
			return errUnauthorized
		case http.StatusForbidden:
			return errForbidden
		case http.StatusServiceUnavailable:
			return errUnavailable
		}
		if he.Code >= 400 && he.Code < 500 {
			return &Error{Status: he.Code, Type: typeInvalidRequest, Code: "invalid_request", Message: http.StatusText(he.Code)}
		}
	}
	return errInternal
}
