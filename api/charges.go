package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"go.uber.org/zap"

	"github.com/paygate/paygate/apikey"
	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/idempotency"
	"github.com/paygate/paygate/reconcile"
)

// chargeIDRE is the shape of a charge id (charge.NewID): anything else cannot name a charge.
var chargeIDRE = regexp.MustCompile(`^ch_[A-Za-z0-9_]{1,61}$`)

// chargeID returns the charge id of the request's path, or errNotFound when it cannot be
// one (so that bytes PostgreSQL cannot hold, such as NUL, never reach a query).
func chargeID(c echo.Context) (string, *Error) {
	id := c.Param("id")
	if !chargeIDRE.MatchString(id) {
		return "", errNotFound
	}
	return id, nil
}

const (
	defaultRequestTimeout = 8 * time.Second
	maxRequestTimeout     = 60 * time.Second
)

type chargeHandlers struct {
	charges Charges
	limits  charge.Limits
	log     *zap.Logger
	review  Review
}

func (h *chargeHandlers) create(c echo.Context) error {
	p, _ := principalOf(c)
	key, timeout, body, scan, apiErr := keyedRequest(c)
	if apiErr != nil {
		return apiErr
	}
	req, apiErr := decodeChargeRequest(body, scan, h.limits)
	if apiErr != nil {
		return apiErr
	}
	fp, apiErr := fingerprint(c, body, scan)
	if apiErr != nil {
		return apiErr
	}
	resp, err := h.charges.Create(c.Request().Context(), charge.CreateParams{
		MerchantID:  p.MerchantID,
		Key:         key,
		Fingerprint: fp,
		Request:     req,
		Timeout:     timeout,
	})
	return writeCreate(c, resp, err)
}

// reattemptBody is the JSON body of POST /v1/charges/{id}/reattempt.
type reattemptBody struct {
	PaymentMethod *string `json:"payment_method"`
}

func (h *chargeHandlers) reattempt(c echo.Context) error {
	p, _ := principalOf(c)
	key, timeout, body, scan, apiErr := keyedRequest(c)
	if apiErr != nil {
		return apiErr
	}
	if len(bytes.TrimSpace(body)) == 0 {
		body = []byte("{}")
		scan = scanBody(body)
	}
	var b reattemptBody
	if apiErr := decodeScanned(body, scan, &b); apiErr != nil {
		return apiErr
	}
	pm := deref(b.PaymentMethod)
	if b.PaymentMethod != nil && !charge.IsPaymentMethodID(pm) {
		return invalid(charge.CodeParameterInvalid, "payment_method", "payment_method must be a processor payment method id (pm_...)")
	}
	id, apiErr := chargeID(c)
	if apiErr != nil {
		return apiErr
	}
	fp, apiErr := fingerprint(c, body, scan)
	if apiErr != nil {
		return apiErr
	}
	resp, err := h.charges.Reattempt(c.Request().Context(), charge.ReattemptParams{
		MerchantID: p.MerchantID, Key: key, Fingerprint: fp, ChargeID: id, PaymentMethod: pm, Timeout: timeout,
	})
	return writeCreate(c, resp, err)
}

// fingerprint returns the idempotency fingerprint of the request whose body was scanned
// as scan: from the canonical form the scan built, else from the body.
func fingerprint(c echo.Context, body []byte, scan bodyScan) (idempotency.Fingerprint, *Error) {
	r := c.Request()
	if scan.canonical != nil {
		return idempotency.FingerprintCanonical(r.Method, r.URL.Path, scan.canonical), nil
	}
	fp, err := idempotency.FingerprintOf(r.Method, r.URL.Path, body)
	if err != nil {
		return fp, invalid("invalid_json", "", "the request body is not valid JSON")
	}
	return fp, nil
}

// keyedRequest reads what every keyed POST carries: the Idempotency-Key, the caller's
// deadline and the body, with what one scan of the body found (scanBody). A body that looks
// like it holds a card number is refused before anything else is checked, and never echoed. The key is the caller's opaque token: a
// digits-only key (a timestamp) is a key, not card data; one that holds a card number is
// shown masked wherever a charge is (charge.MaskedKey), and kept whole.
func keyedRequest(c echo.Context) (string, time.Duration, []byte, bodyScan, *Error) {
	body, err := readAll(c.Request())
	if err != nil {
		return "", 0, nil, bodyScan{}, answerOf(err, nil) // the body limit's 413, or a client that went away
	}
	scan := scanBody(body)
	if scan.card {
		return "", 0, nil, bodyScan{}, errCardData
	}
	key, err := idempotency.ParseKey(c.Request().Header.Get("Idempotency-Key"))
	if errors.Is(err, idempotency.ErrKeyMissing) {
		return "", 0, nil, bodyScan{}, invalid("idempotency_key_missing", "Idempotency-Key", "the Idempotency-Key header is required")
	}
	if err != nil {
		return "", 0, nil, bodyScan{}, invalid("idempotency_key_invalid", "Idempotency-Key", "Idempotency-Key must be 1 to 255 printable ASCII characters")
	}
	timeout, apiErr := requestTimeout(c.Request().Header.Get("Request-Timeout-Ms"))
	if apiErr != nil {
		return "", 0, nil, bodyScan{}, apiErr
	}
	return key, timeout, body, scan, nil
}

// writeCreate answers a request for a new charge (a charge or a reattempt), or returns the
// engine's error. An answer replayed for its Idempotency-Key (stored, or a first 202's charge
// in its current state) carries Idempotent-Replayed: true, as Stripe's do; a first answer
// carries no such header.
func writeCreate(c echo.Context, resp charge.Response, err error) error {
	if err != nil {
		return err
	}
	if resp.Replayed {
		c.Response().Header().Set("Idempotent-Replayed", "true")
	}
	return writeResponse(c, resp)
}

func writeResponse(c echo.Context, resp charge.Response) error {
	if resp.Status == http.StatusServiceUnavailable || resp.Status == http.StatusGatewayTimeout {
		c.Response().Header().Set("Retry-After", retryAfterSeconds(resp.RetryAfter))
	}
	return c.Blob(resp.Status, echo.MIMEApplicationJSON, resp.Body)
}

// retryAfterSeconds is the Retry-After of an answer that asks for a retry: the processor's
// own wait when it gave one (rounded up to whole seconds), else one second.
func retryAfterSeconds(wait time.Duration) string {
	secs := (wait + time.Second - 1) / time.Second
	return strconv.FormatInt(int64(max(secs, 1)), 10)
}

// requestTimeout reads Request-Timeout-Ms: the caller's remaining deadline.
func requestTimeout(v string) (time.Duration, *Error) {
	if v == "" {
		return defaultRequestTimeout, nil
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	// Compared in milliseconds: a huge value would overflow the duration and pass.
	if err != nil || ms <= 0 || ms > maxRequestTimeout.Milliseconds() {
		return 0, invalid("request_timeout_invalid", "Request-Timeout-Ms", "Request-Timeout-Ms must be an integer from 1 to 60000")
	}
	return time.Duration(ms) * time.Millisecond, nil
}

func (h *chargeHandlers) get(c echo.Context) error {
	p, _ := principalOf(c)
	id, apiErr := chargeID(c)
	if apiErr != nil {
		return apiErr
	}
	v, err := h.detail(c.Request().Context(), p, id)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, v)
}

// detail is the charge id as GET /v1/charges/{id} shows it to p: with its attempts, its
// audit trail (a checkout's view of it for a checkout key) and its reattempt chain.
func (h *chargeHandlers) detail(ctx context.Context, p apikey.Principal, id string) (chargeJSON, error) {
	ch, err := h.charges.Get(ctx, p.MerchantID, id)
	if err != nil {
		return chargeJSON{}, err
	}
	v := chargeView(ch, true)
	if h.review != nil {
		events, rec, err := h.review.ChargeTrail(ctx, p.MerchantID, ch.ID)
		if err != nil {
			return chargeJSON{}, err
		}
		v.Events = events
		if v.Events == nil {
			v.Events = []charge.Event{}
		}
		v.Reconciliation = rec
		if p.Role == apikey.RoleCheckout {
			// A checkout sees its charge's state changes; who in the operations team acted
			// (their key ids), their notes and the processor evidence are for operators and
			// auditors.
			v.Events = stateChanges(v.Events)
			v.Reconciliation = nil
		}
		if ch.ReattemptOf != "" || ch.ReattemptMode == charge.ReattemptAuto || ch.NextReattemptAt != nil {
			if v.Chain, err = h.review.Chain(ctx, p.MerchantID, ch.Chain); err != nil {
				return chargeJSON{}, err
			}
		}
	}
	return v, nil
}

// stateChanges returns events as a checkout key sees them: when, what and why, the state
// before and after, and the kind of actor ("operator", never its key id); no notes and no
// evidence.
func stateChanges(events []charge.Event) []charge.Event {
	out := make([]charge.Event, 0, len(events))
	for _, e := range events {
		actor, _, _ := strings.Cut(e.Actor, ":")
		out = append(out, charge.Event{At: e.At, Actor: actor, Action: e.Action, Reason: e.Reason,
			StatusBefore: e.StatusBefore, StatusAfter: e.StatusAfter})
	}
	return out
}

func (h *chargeHandlers) list(c echo.Context) error {
	p, _ := principalOf(c)
	q, apiErr := queryParams(c)
	if apiErr != nil {
		return apiErr
	}
	for k := range q {
		if k != "status" && k != "limit" && k != "starting_after" {
			return invalid("parameter_unknown", k, "unknown parameter "+strconvQuote(k))
		}
	}
	lp := charge.ListParams{MerchantID: p.MerchantID, Limit: 10, StartingAfter: q.Get("starting_after")}
	if s := q.Get("status"); s != "" {
		switch st := charge.Status(s); st {
		case charge.StatusProcessing, charge.StatusSucceeded, charge.StatusDeclined, charge.StatusPending, charge.StatusFailed:
			lp.Status = st
		default:
			return invalid(charge.CodeParameterInvalid, "status", "status must be processing, succeeded, declined, pending or failed")
		}
	}
	if l := q.Get("limit"); l != "" {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > 100 {
			return invalid(charge.CodeParameterInvalid, "limit", "limit must be an integer from 1 to 100")
		}
		lp.Limit = n
	}
	if lp.StartingAfter != "" {
		if !chargeIDRE.MatchString(lp.StartingAfter) {
			return invalid(charge.CodeParameterInvalid, "starting_after", "starting_after must be a charge id (ch_...)")
		}
		// The store reads a cursor that names no charge of the merchant's as the end of
		// the list: such a cursor is refused, as Stripe refuses it.
		if _, err := h.charges.Get(c.Request().Context(), p.MerchantID, lp.StartingAfter); errors.Is(err, charge.ErrNotFound) {
			return errCursorMissing
		} else if err != nil {
			return err
		}
	}
	list, more, err := h.charges.List(c.Request().Context(), lp)
	if errors.Is(err, charge.ErrNotFound) {
		return errCursorMissing
	}
	if err != nil {
		return err
	}
	data := make([]chargeJSON, 0, len(list))
	for i := range list {
		data = append(data, chargeView(&list[i], false))
	}
	return c.JSON(http.StatusOK, map[string]any{"object": "list", "url": "/v1/charges", "has_more": more, "data": data})
}

// errCursorMissing answers a list whose starting_after names no charge of the caller's.
var errCursorMissing = &Error{Status: http.StatusNotFound, Type: typeInvalidRequest, Code: "resource_missing",
	Param: "starting_after", Message: "no such charge: starting_after must name one of your charges"}

func strconvQuote(s string) string { return strconv.Quote(strings.ToValidUTF8(s, "?")) }

// chargeJSON is a charge as the API shows it.
type chargeJSON struct {
	ID             string            `json:"id"`
	Object         string            `json:"object"`
	Amount         int64             `json:"amount"`
	Currency       string            `json:"currency"`
	Status         charge.Status     `json:"status"`
	Reference      *string           `json:"reference"`
	Created        int64             `json:"created"`
	ProcessorRef   *string           `json:"processor_ref"`
	Attempts       int               `json:"attempts"`
	IdempotencyKey string            `json:"idempotency_key"` // as charge.MaskedKey shows it
	PaymentMethod  string            `json:"payment_method"`
	Customer       *string           `json:"customer"`
	Initiator      charge.Initiator  `json:"initiator"`
	Reattempt      string            `json:"reattempt"`
	ReattemptOf    *string           `json:"reattempt_of"`
	Metadata       map[string]string `json:"metadata"`
	Failure        *charge.Failure   `json:"failure,omitempty"`
	Decline        json.RawMessage   `json:"decline,omitempty"`
	AttemptsDetail *[]attemptJSON    `json:"attempts_detail,omitempty"` // set in the detail view only
	Events         []charge.Event    `json:"events,omitempty"`
	Reconciliation *reconcile.State  `json:"reconciliation,omitempty"`
	// Chain lists the charges of the reattempt chain, oldest first.
	Chain           []charge.ChainStep `json:"chain,omitempty"`
	NextReattemptAt *time.Time         `json:"next_reattempt_at,omitempty"`
	// ReferenceDuplicateOf, set only on a charge found paid while another live charge held its
	// reference, names that charge: two payments for one order.
	ReferenceDuplicateOf string `json:"reference_duplicate_of,omitempty"`
	// ReattemptDuplicateOf, set only on a charge found paid while another charge of its
	// reattempt chain was live, names that charge: two payments for one order.
	ReattemptDuplicateOf string `json:"reattempt_duplicate_of,omitempty"`
	// Error is the contract's error object beside the charge, in an answer whose status is
	// an error (402, 4xx, 5xx): a client that reads every error as {"error": {...}} finds
	// one, and one that reads the charge finds it whole.
	Error *Error `json:"error,omitempty"`
}

type attemptJSON struct {
	N                  int     `json:"n"`
	StartedAt          string  `json:"started_at"`
	DurationMS         int64   `json:"duration_ms"`
	TimeoutMS          int64   `json:"timeout_ms"`
	Class              string  `json:"class"`
	HTTPStatus         int     `json:"http_status"`
	ProcessorCode      string  `json:"processor_code"`
	RetryAfterMS       int64   `json:"retry_after_ms"`
	BackoffMS          int64   `json:"backoff_ms"`
	BudgetTokensBefore float64 `json:"budget_tokens_before"`
	BudgetTokensAfter  float64 `json:"budget_tokens_after"`
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// present is p, or nil when the string it points to is empty: a view of a charge's field
// that points into the charge instead of a copy.
func present(p *string) *string {
	if *p == "" {
		return nil
	}
	return p
}

// chargeView is c as the API shows it; its pointers point into c, which must not change
// before the view is encoded.
func chargeView(c *charge.Charge, detail bool) chargeJSON {
	v := chargeJSON{
		ID: c.ID, Object: "charge", Amount: c.Amount, Currency: c.Currency, Status: c.Status,
		Reference: present(&c.Reference), Created: c.CreatedAt.Unix(), ProcessorRef: present(&c.ProcessorRef),
		Attempts: c.Attempts, IdempotencyKey: charge.MaskedKey(c.IdempotencyKey), PaymentMethod: c.PaymentMethod,
		Customer: present(&c.Customer), Initiator: c.Initiator, Reattempt: string(c.ReattemptMode),
		ReattemptOf: present(&c.ReattemptOf), Metadata: c.Metadata, Failure: c.Failure, Decline: c.Decline,
		NextReattemptAt:      c.NextReattemptAt,
		ReferenceDuplicateOf: c.ReferenceDuplicateOf,
		ReattemptDuplicateOf: c.ReattemptDuplicateOf,
	}
	if v.Metadata == nil {
		v.Metadata = map[string]string{}
	}
	if detail {
		// Always present in the detail view, empty when no attempt was made.
		attempts := make([]attemptJSON, 0, len(c.AttemptsDetail))
		for _, a := range c.AttemptsDetail {
			attempts = append(attempts, attemptJSON{
				N: a.N, StartedAt: a.StartedAt.UTC().Format(time.RFC3339Nano), DurationMS: a.DurationMS,
				TimeoutMS: a.TimeoutMS, Class: a.Class, HTTPStatus: a.HTTPStatus, ProcessorCode: a.ProcessorCode,
				RetryAfterMS: a.RetryAfterMS, BackoffMS: a.BackoffMS,
				BudgetTokensBefore: a.BudgetTokensBefore, BudgetTokensAfter: a.BudgetTokensAfter,
			})
		}
		v.AttemptsDetail = &attempts
	}
	return v
}

// StatusOf maps a charge to the HTTP status of an answer about it.
func StatusOf(c *charge.Charge) int {
	switch c.Status {
	case charge.StatusSucceeded:
		return http.StatusOK
	case charge.StatusDeclined:
		return http.StatusPaymentRequired
	case charge.StatusPending, charge.StatusProcessing:
		return http.StatusAccepted
	}
	if c.Failure == nil {
		return http.StatusServiceUnavailable
	}
	switch {
	case !c.Failure.Retryable:
		// No retry can cure it (an invalid request, a key past its window, a charge an
		// operator or reconciliation settled as failed): never "retry later".
		return http.StatusUnprocessableEntity
	case c.Failure.Code == "deadline_exceeded":
		return http.StatusGatewayTimeout
	}
	return http.StatusServiceUnavailable
}

// RenderCharge is the charge engine's Renderer: the answer to a charge request.
func RenderCharge(c *charge.Charge) charge.Response {
	v := chargeView(c, false)
	status := StatusOf(c)
	v.Error = chargeError(c, status)
	body, err := json.Marshal(v)
	if err != nil {
		// chargeJSON holds only marshalable fields.
		panic(err)
	}
	return charge.Response{Status: status, Body: body}
}

// chargeError is the error object of an answer about charge c with HTTP status status: nil
// for a success or a pending charge.
func chargeError(c *charge.Charge, status int) *Error {
	switch {
	case status < 400:
		return nil
	case c.Status == charge.StatusDeclined:
		return &Error{Type: "card_error", Code: "card_declined", Message: "the issuer declined the charge: see decline"}
	}
	code := "charge_failed"
	if c.Failure != nil && c.Failure.Code != "" {
		code = c.Failure.Code
	}
	e := &Error{Type: typeAPI, Code: code, Message: "the charge failed: see failure"}
	if status < 500 {
		e.Type = typeInvalidRequest
	}
	return e
}
