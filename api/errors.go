package api

import (
	"errors"
	"net/http"
	"time"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/event"
	"github.com/paygate/paygate/jobs"
	"github.com/paygate/paygate/reconcile"
	"github.com/paygate/paygate/report"
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
// the parameter at fault; it is always sent, empty when no single parameter is. Extra fields
// go beside the standard ones; RetryAfter, when set, is sent as the Retry-After header.
type Error struct {
	Status     int            `json:"-"`
	Type       string         `json:"type"`
	Code       string         `json:"code"`
	Message    string         `json:"message"`
	Param      string         `json:"param"`
	Extra      map[string]any `json:"-"`
	RetryAfter time.Duration  `json:"-"`
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

// Errors that handlers wrap around what failed, so that the table answers for them.
var (
	// errAuthUnavailable: the API key could not be checked.
	errAuthUnavailable = errors.New("api: the key cannot be checked now")
	// errCheckFailed: a reconciliation check could not ask the processor.
	errCheckFailed = errors.New("api: the processor could not be queried")
)

// sentinels are the answers to the domain's errors that carry no data. Handlers return the
// domain's errors as they come; this table and typed say what each means to the caller.
var sentinels = []struct {
	err    error
	answer *Error
}{
	{charge.ErrNotFound, errNotFound},
	{jobs.ErrNotFound, errNotFound},
	{event.ErrNotFound, errNotFound},
	{charge.ErrNotDeclined, &Error{Status: http.StatusConflict, Type: typeInvalidRequest, Code: "charge_not_declined",
		Message: "only a declined charge can be reattempted"}},
	// The first request runs within its deadline: a retry a second later may find it done.
	{charge.ErrKeyInUse, &Error{Status: http.StatusConflict, Type: typeIdempotency, Code: "idempotency_key_in_use",
		Message: "a request with this Idempotency-Key is still running; retry later with the same key", RetryAfter: time.Second}},
	{charge.ErrKeyReused, &Error{Status: http.StatusUnprocessableEntity, Type: typeIdempotency, Code: "idempotency_key_reused",
		Message: "this Idempotency-Key was used with another request; use a new key for a new charge"}},
	{reconcile.ErrReconcileFirst, &Error{Status: http.StatusConflict, Type: typeInvalidRequest, Code: "reconcile_first",
		Message: "resolve only after a reconciliation in the last 10 minutes, made once no attempt could still be executing, found nothing conclusive: POST /v1/charges/{id}/reconcile first"}},
	{reconcile.ErrNotResolvable, &Error{Status: http.StatusConflict, Type: typeInvalidRequest, Code: "charge_not_resolvable",
		Message: "only a pending charge, or one in review, can be resolved by hand"}},
	{reconcile.ErrDeclineStands, &Error{Status: http.StatusConflict, Type: typeInvalidRequest, Code: "decline_stands",
		Message: "the processor declined this charge; resolve it with outcome declined to acknowledge its review", Param: "outcome"}},
	{jobs.ErrNotDead, &Error{Status: http.StatusConflict, Type: typeInvalidRequest, Code: "job_not_dead",
		Message: "only a dead letter can be replayed"}},
	{jobs.ErrDuplicate, &Error{Status: http.StatusConflict, Type: typeInvalidRequest, Code: "job_duplicate",
		Message: "a live job already does this work"}},
	{jobs.ErrBadPage, invalid("parameter_invalid", "cursor", "cursor must be the next_cursor of a previous page")},
	{errAuthUnavailable, errUnavailable},
	{errCheckFailed, &Error{Status: http.StatusServiceUnavailable, Type: typeAPI, Code: "processor_unavailable",
		Message: "the processor could not be queried now; try again"}},
}

// typed returns the answer to an error that carries data, or nil.
func typed(err error) *Error {
	var (
		replay   *jobs.ReplayRefusedError
		refused  *charge.ReattemptRefusedError
		verr     *charge.ValidationError
		dup      *charge.DuplicateReferenceError
		live     *charge.DuplicateReattemptError
		inFlight *reconcile.AttemptInFlightError
		query    *report.QueryError
	)
	switch {
	case errors.As(err, &replay):
		// First: the guard's reason, whatever it is, is the replay's refusal.
		return &Error{Status: http.StatusUnprocessableEntity, Type: typeInvalidRequest, Code: "replay_refused",
			Message: "the replay is refused: " + replay.Reason.Error()}
	case errors.As(err, &refused):
		extra := map[string]any{"reason": refused.Verdict.Reason, "not_before": nil}
		if !refused.Verdict.NotBefore.IsZero() {
			// As the decline block writes it (a time.Time in JSON: RFC 3339 with the
			// fraction of a second), so that not_before is never earlier than the rule.
			extra["not_before"] = refused.Verdict.NotBefore.UTC()
		}
		return &Error{Status: http.StatusUnprocessableEntity, Type: typeInvalidRequest, Code: "reattempt_not_allowed",
			Message: "the card network rules do not allow charging this card now", Extra: extra}
	case errors.As(err, &verr):
		return &Error{Status: http.StatusBadRequest, Type: typeInvalidRequest, Code: verr.Code, Param: verr.Param, Message: verr.Message}
	case errors.As(err, &dup):
		return &Error{Status: http.StatusConflict, Type: typeInvalidRequest, Code: "duplicate_reference", Param: "reference",
			Message: "a live charge already carries this reference", Extra: map[string]any{"charge": dup.ChargeID}}
	case errors.As(err, &live):
		return &Error{Status: http.StatusConflict, Type: typeInvalidRequest, Code: "duplicate_reattempt",
			Message: "a reattempt of this declined charge is already pending or succeeded: it may be paid",
			Extra:   map[string]any{"charge": live.ChargeID}}
	case errors.As(err, &inFlight):
		// Whatever a check finds now, the attempt may still take effect: a charge resolved
		// failed now could be charged again by the checkout and then succeed.
		until := inFlight.Until.UTC()
		return &Error{Status: http.StatusConflict, Type: typeInvalidRequest, Code: "attempt_in_flight",
			Message: "an attempt of this charge may still be executing at the processor until " + until.Format(time.RFC3339) +
				": reconcile after that time, then resolve",
			Extra: map[string]any{"in_flight_until": until}, RetryAfter: max(time.Until(until), time.Second)}
	case errors.As(err, &query):
		return invalid("parameter_invalid", query.Param, query.Msg)
	}
	return nil
}

// errorHandler returns echo's HTTPErrorHandler: every error leaves as the envelope, its
// answer the table's (answerOf); unavailable reports an error that says the database cannot
// be reached now.
func errorHandler(log *zap.Logger, unavailable func(error) bool) echo.HTTPErrorHandler {
	return func(err error, c echo.Context) {
		if c.Response().Committed {
			return
		}
		apiErr := answerOf(err, unavailable)
		if apiErr.Status >= 500 {
			log.Error("request failed", zap.String("request_id", requestID(c)), zap.String("route", c.Path()), zap.Error(err))
		}
		h := c.Response().Header()
		switch {
		case apiErr.RetryAfter > 0:
			h.Set("Retry-After", retryAfterSeconds(apiErr.RetryAfter))
		case apiErr.Status == http.StatusServiceUnavailable && h.Get("Retry-After") == "":
			h.Set("Retry-After", "1")
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

// answerOf is the one table from errors to answers: an *Error as it is; a database that
// cannot be reached, wherever the error comes from; the domain's errors (typed, and
// sentinels); echo's own; anything else is an internal error.
func answerOf(err error, unavailable func(error) bool) *Error {
	var apiErr *Error
	if errors.As(err, &apiErr) {
		return apiErr
	}
	if unavailable != nil && unavailable(err) {
		return errDatabaseUnavailable
	}
	if e := typed(err); e != nil {
		return e
	}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			return s.answer
		}
	}
	var he *echo.HTTPError
	if errors.As(err, &he) {
		return echoAnswer(he)
	}
	return errInternal
}

// echoAnswer is the answer to one of echo's own errors.
func echoAnswer(he *echo.HTTPError) *Error {
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
	return errInternal
}
