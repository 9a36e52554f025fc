package api

import (
	"context"
	"net/http"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/paygate/paygate/jobs"
)

// DeadLetters is the dead-letter queue of background work (a *jobs.Queue).
type DeadLetters interface {
	Dead(ctx context.Context, p jobs.DeadParams) ([]jobs.DeadJob, string, error)
	Replay(ctx context.Context, id int64, p jobs.ReplayParams) (jobs.DeadJob, error)
}

type jobHandlers struct {
	jobs DeadLetters
}

// dead lists the merchant's dead letters: GET /v1/jobs/dead?limit=&cursor=.
func (h *jobHandlers) dead(c echo.Context) error {
	p, _ := principalOf(c)
	q, apiErr := queryParams(c)
	if apiErr != nil {
		return apiErr
	}
	for k := range q {
		if k != "limit" && k != "cursor" {
			return invalid("parameter_unknown", k, "unknown parameter "+strconvQuote(k))
		}
	}
	dp := jobs.DeadParams{Merchant: p.MerchantID, Cursor: q.Get("cursor")}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 100 {
			return invalid("parameter_invalid", "limit", "limit must be an integer from 1 to 100")
		}
		dp.Limit = n
	}
	list, next, err := h.jobs.Dead(c.Request().Context(), dp)
	if err != nil {
		return err
	}
	if list == nil {
		list = []jobs.DeadJob{}
	}
	return c.JSON(http.StatusOK, map[string]any{"object": "list", "data": list, "next_cursor": next, "has_more": next != ""})
}

// replay deliberately runs a dead letter again: POST /v1/jobs/{id}/replay.
func (h *jobHandlers) replay(c echo.Context) error {
	p, _ := principalOf(c)
	id, err := strconv.ParseInt(c.Param("id"), 10, 64)
	if err != nil || id <= 0 {
		return errNotFound
	}
	job, err := h.jobs.Replay(c.Request().Context(), id, jobs.ReplayParams{By: p.KeyID, Merchant: p.MerchantID})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, job)
}
