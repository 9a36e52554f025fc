package processor

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/stripe/stripe-go/v76"
	"github.com/stripe/stripe-go/v76/form"

	"github.com/paygate/paygate/retry"
)

// DefaultReadTimeout bounds a read whose context carries no deadline of its own.
const DefaultReadTimeout = 10 * time.Second

// Limits of the reads, as the processor defines them.
const (
	// MaxListLimit is the largest page a list answers (Stripe: 100).
	MaxListLimit = 100
	// searchPageSize is the page size of SearchByCharge: one charge id is carried by one
	// PaymentIntent, so a page of ten already proves a conflict.
	searchPageSize = 10
	// maxSearchPages bounds how far SearchByCharge pages.
	maxSearchPages = 5
)

// Intent is paygate's view of one PaymentIntent, as the reads return it: what
// reconciliation compares with the charge and the evidence it records. It is JSON-able.
type Intent struct {
	// ID is the PaymentIntent id (pi_...).
	ID string `json:"id"`
	// Status is the PaymentIntent's status (succeeded, processing, requires_action,
	// requires_payment_method, canceled, ...).
	Status string `json:"status"`
	// Amount is in minor units of Currency.
	Amount int64 `json:"amount"`
	// Currency is the lowercase ISO 4217 code.
	Currency string `json:"currency"`
	// Customer is the customer id, empty when none.
	Customer string `json:"customer,omitempty"`
	// PaymentMethod is the payment method id, empty when none.
	PaymentMethod string `json:"payment_method,omitempty"`
	// ChargeID is paygate's charge id from the metadata (MetadataChargeID), empty for a
	// PaymentIntent paygate did not create.
	ChargeID string `json:"charge_id,omitempty"`
	// RootChargeID is the first charge of a reattempt chain (MetadataRootChargeID).
	RootChargeID string `json:"root_charge_id,omitempty"`
	// Created is when the processor created the PaymentIntent (whole seconds, UTC).
	Created time.Time `json:"created"`
	// Decline is the evidence of last_payment_error, newer fields included, when it is a
	// card_error; nil when the PaymentIntent carries no error or one of another type (an
	// api_error, an idempotency_error), which is no decline.
	Decline *Decline `json:"decline,omitempty"`
}

// IntentPage is one page of a list of PaymentIntents, newest first.
type IntentPage struct {
	// Intents are the page's PaymentIntents.
	Intents []Intent
	// HasMore reports that older PaymentIntents follow the last one of the page.
	HasMore bool
}

// ReadResult classifies one read with the retry loop's classes, read semantics:
//
//	answer (found, or 404 resource_missing: NotFound)   retry.ClassSuccess
//	network error, 5xx, 409, non-JSON body              retry.ClassRetry (a read is always replay-safe)
//	429                                                 retry.ClassRetryAfter, with Retry-After
//	Stripe-Should-Retry: true / false                   overrides the status code
//	other 4xx (bad parameter, authentication, ...)      retry.ClassTerminal
type ReadResult struct {
	// Outcome is the classification. For reads Outcome.MaybeExecuted is always false.
	Outcome retry.Outcome
	// NotFound is the processor's definite answer that the object does not exist (404
	// resource_missing); Outcome.Class is then retry.ClassSuccess.
	NotFound bool
	// RequestID is the processor's Request-Id of the (last) answer.
	RequestID string
	// Err is the underlying error, for logs; it carries no secret.
	Err error
}

// Answered reports whether the processor answered the read: found or definitely not found.
func (r ReadResult) Answered() bool { return r.Outcome.Class == retry.ClassSuccess }

// Retrieve reads one PaymentIntent by id. A PaymentIntent that does not exist is answered
// with ReadResult.NotFound; a failed read with an empty Intent and the failure's class.
func (c *Client) Retrieve(ctx context.Context, paymentIntentID string) (Intent, ReadResult) {
	if paymentIntentID == "" {
		return Intent{}, ReadResult{Outcome: terminal(0, "missing_payment_intent_id"),
			Err: errors.New("processor: retrieve: no PaymentIntent id")}
	}
	ctx, cancel := readContext(ctx)
	defer cancel()
	ctx, ex := withExchange(ctx)
	params := &stripe.PaymentIntentParams{}
	params.Context = ctx
	pi, err := c.pi.Get(paymentIntentID, params)
	if err != nil {
		return Intent{}, classifyRead(ex.response(ctx), err)
	}
	var raw []byte
	if pi.LastResponse != nil {
		raw = pi.LastResponse.RawJSON
	}
	return intentOf(pi, lastPaymentErrorOf(raw)), answered(pi.LastResponse)
}

// ListByCreated reads one page of the PaymentIntents created in [from, to] (whole seconds,
// both ends included), newest first, starting after the PaymentIntent startingAfter (empty:
// the newest). limit is clamped to 1..MaxListLimit. The list is consistent at once: a
// PaymentIntent the processor created is in it.
func (c *Client) ListByCreated(ctx context.Context, from, to time.Time, startingAfter string, limit int) (IntentPage, ReadResult) {
	limit = min(max(limit, 1), MaxListLimit)
	ctx, cancel := readContext(ctx)
	defer cancel()
	ctx, ex := withExchange(ctx)
	params := &stripe.PaymentIntentListParams{
		CreatedRange: &stripe.RangeQueryParams{GreaterThanOrEqual: from.Unix(), LesserThanOrEqual: ceilUnix(to)},
	}
	params.Limit = stripe.Int64(int64(limit))
	if startingAfter != "" {
		params.StartingAfter = stripe.String(startingAfter)
	}
	params.Context = ctx
	list := &stripe.PaymentIntentList{}
	if err := c.getPage("/v1/payment_intents", params, params.GetParams(), list); err != nil {
		return IntentPage{}, collectionRead(classifyRead(ex.response(ctx), err))
	}
	page := IntentPage{HasMore: list.HasMore, Intents: intentsOf(list.Data, list.LastResponse)}
	return page, answered(list.LastResponse)
}

// SearchByCharge finds the PaymentIntents whose metadata carries chargeID as paygate's charge
// id, newest first, following the search's pages (a few at most). Search lags the writes
// (seconds, up to an hour in incidents): an empty answer is no proof of absence. When a later
// page fails, the intents found so far come back with that page's failure.
func (c *Client) SearchByCharge(ctx context.Context, chargeID string) ([]Intent, ReadResult) {
	if chargeID == "" {
		return nil, ReadResult{Outcome: terminal(0, "missing_charge_id"),
			Err: errors.New("processor: search: no charge id")}
	}
	ctx, cancel := readContext(ctx)
	defer cancel()
	query := MetadataQuery(MetadataChargeID, chargeID)
	var (
		found []Intent
		page  string
		res   ReadResult
	)
	for range maxSearchPages {
		pctx, ex := withExchange(ctx)
		params := &stripe.PaymentIntentSearchParams{}
		params.Query = query
		params.Limit = stripe.Int64(searchPageSize)
		if page != "" {
			params.Page = stripe.String(page)
		}
		params.Context = pctx
		sr := &stripe.PaymentIntentSearchResult{}
		if err := c.getPage("/v1/payment_intents/search", params, params.GetParams(), sr); err != nil {
			return found, collectionRead(classifyRead(ex.response(pctx), err))
		}
		found = append(found, intentsOf(sr.Data, sr.LastResponse)...)
		res = answered(sr.LastResponse)
		if !sr.HasMore || sr.NextPage == nil || *sr.NextPage == "" {
			break
		}
		page = *sr.NextPage
	}
	return found, res
}

// collectionRead turns a "not found" for a list or search (its cursor vanished) into a
// terminal failure: only an object read can prove an absence, never an empty collection.
func collectionRead(r ReadResult) ReadResult {
	if r.NotFound {
		r.NotFound = false
		r.Outcome.Class = retry.ClassTerminal
	}
	return r
}

// getPage reads one page of a list or search. stripe-go's Call cannot encode list and search
// parameters (it reflects on a Metadata field they lack); its own iterators encode them
// this way.
func (c *Client) getPage(path string, params any, common *stripe.Params, v stripe.LastResponseSetter) error {
	values := &form.Values{}
	form.AppendTo(values, params)
	return c.backend.CallRaw(http.MethodGet, path, c.key, values, common, v)
}

// MetadataQuery returns the search query clause matching metadata[key] equal to value, in
// the processor's query language: metadata['key']:'value', quotes and backslashes escaped.
func MetadataQuery(key, value string) string {
	return "metadata['" + escapeQuery(key) + "']:'" + escapeQuery(value) + "'"
}

var queryEscaper = strings.NewReplacer(`\`, `\\`, `'`, `\'`)

func escapeQuery(s string) string { return queryEscaper.Replace(s) }

// readContext bounds a read by DefaultReadTimeout when ctx has no deadline.
func readContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, DefaultReadTimeout)
}

// ceilUnix is t in whole seconds, rounded up: a window's end includes its last second.
func ceilUnix(t time.Time) int64 {
	s := t.Unix()
	if t.Nanosecond() > 0 {
		s++
	}
	return s
}

func (ex *exchange) response(ctx context.Context) response {
	wrote, _, status, header := ex.snapshot()
	return response{ctxErr: ctx.Err(), wrote: wrote, status: status, header: header}
}

// answered is the ReadResult of a read the processor answered.
func answered(lr *stripe.APIResponse) ReadResult {
	status := http.StatusOK
	var h http.Header
	if lr != nil {
		h = lr.Header
		if lr.StatusCode != 0 {
			status = lr.StatusCode
		}
	}
	return ReadResult{Outcome: retry.Outcome{Class: retry.ClassSuccess, HTTPStatus: status}, RequestID: requestIDOf(lr, h)}
}

// classifyRead classifies a read that did not come back with its object: its Outcome is
// ClassifyRead's.
func classifyRead(r response, err error) ReadResult {
	var se *stripe.Error
	switch {
	case errors.As(err, &se):
		h := headerOf(se.LastResponse)
		a := errorAnswer(se, h)
		res := ReadResult{Outcome: ClassifyRead(a), NotFound: a.notFound(), RequestID: se.RequestID, Err: errors.New(redact(se.Msg))}
		if res.RequestID == "" {
			res.RequestID = h.Get("Request-Id")
		}
		return res
	case r.status != 0:
		a := Answer{Status: r.status, Unparsed: true, RetryAfter: r.header.Get("Retry-After"), Date: r.header.Get("Date")}
		return ReadResult{Outcome: ClassifyRead(a), RequestID: r.header.Get("Request-Id"), Err: redactErr(err)}
	default:
		return ReadResult{Outcome: ClassifyRead(Answer{Written: r.wrote, Failure: networkCode(r, err)}), Err: redactErr(err)}
	}
}

func redactErr(err error) error {
	if err == nil {
		return nil
	}
	return errors.New(redact(err.Error()))
}

// intentOf turns a decoded PaymentIntent into paygate's view; lastError is its
// last_payment_error re-wrapped as an error body (lastPaymentErrorOf), for the newer fields.
func intentOf(pi *stripe.PaymentIntent, lastError []byte) Intent {
	in := Intent{
		ID:       pi.ID,
		Status:   string(pi.Status),
		Amount:   pi.Amount,
		Currency: strings.ToLower(string(pi.Currency)),
		Created:  time.Unix(pi.Created, 0).UTC(),
	}
	if pi.Customer != nil {
		in.Customer = pi.Customer.ID
	}
	if pi.PaymentMethod != nil {
		in.PaymentMethod = pi.PaymentMethod.ID
	}
	if pi.Metadata != nil {
		in.ChargeID = pi.Metadata[MetadataChargeID]
		in.RootChargeID = pi.Metadata[MetadataRootChargeID]
	}
	if isCardError(pi.LastPaymentError) {
		in.Decline = declineOf(pi.LastPaymentError, lastError)
	}
	return in
}

// intentsOf turns a list or search page into paygate's views, reading the newer decline
// fields from the page's raw JSON.
func intentsOf(data []*stripe.PaymentIntent, lr *stripe.APIResponse) []Intent {
	var raw map[string][]byte
	if lr != nil {
		raw = lastPaymentErrors(lr.RawJSON)
	}
	out := make([]Intent, 0, len(data))
	for _, pi := range data {
		if pi == nil {
			continue
		}
		out = append(out, intentOf(pi, raw[pi.ID]))
	}
	return out
}

// lastPaymentErrors reads a list or search answer's raw JSON and returns, by PaymentIntent
// id, each last_payment_error re-wrapped as an error body for declineOf. Malformed input
// gives an empty map.
func lastPaymentErrors(raw []byte) map[string][]byte {
	// One decode of the page: a page of 100 PaymentIntents is read once more here, not once
	// per PaymentIntent.
	var page struct {
		Data []struct {
			ID               string          `json:"id"`
			LastPaymentError json.RawMessage `json:"last_payment_error"`
		} `json:"data"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &page) != nil {
		return nil
	}
	out := make(map[string][]byte)
	for _, item := range page.Data {
		if item.ID == "" || len(item.LastPaymentError) == 0 {
			continue
		}
		out[item.ID], _ = json.Marshal(map[string]json.RawMessage{"error": item.LastPaymentError})
	}
	return out
}
