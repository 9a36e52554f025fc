package api

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/reconcile"
)

// Review is what the operator endpoints read: the review queue, a charge's audit trail and
// its reattempt chain (a *store.DB).
type Review interface {
	ReviewQueue(ctx context.Context, merchantID string, limit int) ([]reconcile.ReviewItem, error)
	ChargeTrail(ctx context.Context, merchantID, chargeID string) ([]charge.Event, *reconcile.State, error)
	Chain(ctx context.Context, merchantID, chain string) ([]charge.ChainStep, error)
}

// Reconciler runs one reconciliation check of a charge now, and an operator's resolution of
// one (a *reconcile.Janitor).
type Reconciler interface {
	Check(ctx context.Context, chargeID string) (reconcile.Check, error)
	Resolve(ctx context.Context, m reconcile.ManualResolution) (*charge.Charge, error)
}

// resolveWindow is how recent the inconclusive reconciliation before a manual resolution
// must be.
const resolveWindow = 10 * time.Minute

type reviewHandlers struct {
	charges Charges
	review  Review
	recon   Reconciler
}

type reviewJSON struct {
	Charge chargeJSON  `json:"charge"`
	Review reviewState `json:"review"`
	// Evidence is the last check's; Checks are every check so far, oldest first.
	Evidence json.RawMessage   `json:"evidence"`
	Checks   []json.RawMessage `json:"checks"`
}

type reviewState struct {
	Reason string    `json:"reason"`
	Rank   int       `json:"rank"`
	Since  time.Time `json:"since"`
}

// queue answers GET /v1/review?limit= (operators and auditors): limit is 1 to 500,
// default 100; any other parameter is refused.
func (h *reviewHandlers) queue(c echo.Context) error {
	p, _ := principalOf(c)
	q, apiErr := queryParams(c)
	if apiErr != nil {
		return apiErr
	}
	for k := range q {
		if k != "limit" {
			return invalid("parameter_unknown", k, "unknown parameter "+strconvQuote(k))
		}
	}
	limit := 100
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 500 {
			return invalid("parameter_invalid", "limit", "limit must be an integer from 1 to 500")
		}
		limit = n
	}
	items, err := h.review.ReviewQueue(c.Request().Context(), p.MerchantID, limit)
	if err != nil {
		return err
	}
	data := make([]reviewJSON, 0, len(items))
	for _, it := range items {
		ev := it.Evidence
		if len(ev) == 0 {
			ev = json.RawMessage("null")
		}
		checks := it.Checks
		if checks == nil {
			checks = []json.RawMessage{}
		}
		data = append(data, reviewJSON{Charge: chargeView(it.Charge, false),
			Review: reviewState{Reason: it.Reason, Rank: it.Rank, Since: it.Since.UTC()}, Evidence: ev, Checks: checks})
	}
	return c.JSON(http.StatusOK, map[string]any{"object": "list", "data": data})
}

// reconcileNow answers POST /v1/charges/{id}/reconcile: the processor is queried now.
func (h *reviewHandlers) reconcileNow(c echo.Context) error {
	p, _ := principalOf(c)
	id, apiErr := chargeID(c)
	if apiErr != nil {
		return apiErr
	}
	if _, err := h.charges.Get(c.Request().Context(), p.MerchantID, id); err != nil {
		return err
	}
	chk, err := h.recon.Check(c.Request().Context(), id)
	if err != nil {
		// The processor's unavailability, unless the database's outage says otherwise.
		return fmt.Errorf("%w: %w", errCheckFailed, err)
	}
	ch, err := h.charges.Get(c.Request().Context(), p.MerchantID, id)
	if err != nil {
		return err
	}
	var check any = chk
	if chk.N == 0 {
		check = nil // the charge had settled: nothing to check
	}
	return c.JSON(http.StatusOK, map[string]any{"charge": chargeView(ch, true), "check": check})
}

type resolveBody struct {
	Outcome *string `json:"outcome"`
	Note    *string `json:"note"`
}

// resolve answers POST /v1/charges/{id}/resolve.
func (h *reviewHandlers) resolve(c echo.Context) error {
	p, _ := principalOf(c)
	body, err := readBody(c)
	if err != nil {
		return err
	}
	var b resolveBody
	if apiErr := decodeStrict(body, &b); apiErr != nil {
		return apiErr
	}
	outcome := charge.Status(deref(b.Outcome))
	switch outcome {
	case charge.StatusSucceeded, charge.StatusDeclined, charge.StatusFailed:
	case "":
		return invalid(charge.CodeParameterMissing, "outcome", `outcome is required: "succeeded", "declined" or "failed"`)
	default:
		return invalid(charge.CodeParameterInvalid, "outcome", `outcome must be "succeeded", "declined" or "failed"`)
	}
	note := strings.TrimSpace(deref(b.Note))
	if note == "" {
		return invalid(charge.CodeParameterMissing, "note", "a note saying why is required")
	}
	if len(note) > 2000 {
		return invalid(charge.CodeParameterInvalid, "note", "note must be at most 2000 characters")
	}
	if strings.ContainsRune(note, 0) {
		return invalid(charge.CodeParameterInvalid, "note", "note may not contain the NUL character (U+0000)")
	}
	if charge.ContainsCardNumber(note) {
		return invalid(charge.CodeCardData, "note", "card data is not accepted")
	}
	id, apiErr := chargeID(c)
	if apiErr != nil {
		return apiErr
	}
	ch, err := h.recon.Resolve(c.Request().Context(), reconcile.ManualResolution{
		MerchantID: p.MerchantID, ChargeID: id, Outcome: outcome, Note: note,
		Actor: "operator:" + p.KeyID, Within: resolveWindow,
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, chargeView(ch, false))
}

func readBody(c echo.Context) ([]byte, error) {
	b, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return nil, answerOf(err, nil)
	}
	return b, nil
}
