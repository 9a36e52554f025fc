package sim

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"go.uber.org/zap"
)

// createParams are the parameters POST /v1/payment_intents takes: Stripe's
// whole set, of which the simulator models the ones paygate sends.
var createParams = map[string]paramKind{
	"amount":                       scalar,
	"currency":                     scalar,
	"payment_method":               scalar,
	"payment_method_types":         list,
	"confirm":                      scalar,
	"error_on_requires_action":     scalar,
	"off_session":                  scalar,
	"customer":                     scalar,
	"metadata":                     dict,
	"description":                  scalar,
	"expand":                       list,
	"capture_method":               scalar,
	"confirmation_method":          scalar,
	"setup_future_usage":           scalar,
	"application_fee_amount":       accepted,
	"automatic_payment_methods":    accepted,
	"confirmation_token":           accepted,
	"mandate":                      accepted,
	"mandate_data":                 accepted,
	"on_behalf_of":                 accepted,
	"payment_method_configuration": accepted,
	"payment_method_data":          scalar, // refused below: card data never enters
	"payment_method_options":       accepted,
	"radar_options":                accepted,
	"receipt_email":                accepted,
	"return_url":                   scalar,
	"shipping":                     accepted,
	"statement_descriptor":         accepted,
	"statement_descriptor_suffix":  accepted,
	"transfer_data":                accepted,
	"transfer_group":               accepted,
	"use_stripe_sdk":               accepted,
}

// Metadata limits, as at Stripe.
const (
	maxMetadataKeys     = 50
	maxMetadataKeyLen   = 40
	maxMetadataValueLen = 500
	minAmount           = 50
	maxAmount           = 99_999_999
)

// createRequest is a validated POST /v1/payment_intents.
type createRequest struct {
	amount                int64
	currency              string
	customer              string
	description           string
	metadata              map[string]string
	methodID              string
	methodTypes           []string
	confirm               bool
	errorOnRequiresAction bool
	offSession            bool
	setupFutureUsage      string
	returnURL             string
	expand                expansion
}

// validateCreate checks the parameters the way Stripe validates them before
// executing; its errors are never stored under an idempotency key.
func validateCreate(values url.Values) (createRequest, *apiError) {
	var req createRequest
	if _, ok := values["payment_method_data"]; ok || hasPrefixKey(values, "payment_method_data[") {
		return req, invalidRequest("", "payment_method_data",
			"The simulator takes no card details: pass payment_method with a test payment method id.")
	}
	p, e := parseParams(values, createParams)
	if e != nil {
		return req, e
	}
	amount, ok, e := p.integer("amount")
	switch {
	case e != nil:
		return req, e
	case !ok:
		return req, parameterMissing("amount")
	case amount < minAmount:
		return req, invalidRequest("amount_too_small", "amount",
			"Amount must be at least %d in the currency's smallest unit.", minAmount)
	case amount > maxAmount:
		return req, invalidRequest("amount_too_large", "amount",
			"Amount must be no more than %d in the currency's smallest unit.", maxAmount)
	}
	req.amount = amount
	currency, ok := p.str("currency")
	if !ok || currency == "" {
		return req, parameterMissing("currency")
	}
	req.currency = strings.ToLower(currency)
	if !isCurrency(req.currency) {
		return req, invalidRequest("", "currency", "Invalid currency: %s.", sanitize(currency))
	}
	if req.confirm, e = p.boolean("confirm"); e != nil {
		return req, e
	}
	if req.errorOnRequiresAction, e = p.boolean("error_on_requires_action"); e != nil {
		return req, e
	}
	switch v, ok := p.str("off_session"); {
	case !ok, v == "false", v == "":
	case v == "true", v == "one_off", v == "recurring":
		req.offSession = true
	default:
		return req, invalidBoolean("off_session", sanitize(v))
	}
	if req.offSession && !req.confirm {
		return req, invalidRequest("", "off_session",
			"You can only pass in `off_session` when `confirm` is set to true.")
	}
	if req.errorOnRequiresAction && !req.confirm {
		return req, invalidRequest("", "error_on_requires_action",
			"You can only pass in `error_on_requires_action` when `confirm` is set to true.")
	}
	if v, ok := p.str("return_url"); ok && v != "" {
		if !req.confirm {
			return req, invalidRequest("", "return_url",
				"You can only pass in `return_url` when `confirm` is set to true.")
		}
		req.returnURL = v
	}
	if v, ok := p.str("capture_method"); ok && v != "automatic" && v != "automatic_async" {
		return req, invalidRequest("", "capture_method",
			"The simulator supports capture_method automatic only, not %q.", sanitize(v))
	}
	if v, ok := p.str("confirmation_method"); ok && v != "automatic" {
		return req, invalidRequest("", "confirmation_method",
			"The simulator supports confirmation_method automatic only, not %q.", sanitize(v))
	}
	if v, ok := p.str("setup_future_usage"); ok {
		if v != "on_session" && v != "off_session" && v != "" {
			return req, invalidRequest("", "setup_future_usage", "Invalid setup_future_usage: %s", sanitize(v))
		}
		req.setupFutureUsage = v
	}
	req.customer, _ = p.str("customer")
	req.description, _ = p.str("description")
	req.methodID, _ = p.str("payment_method")
	req.methodTypes = p.lists["payment_method_types"]
	if len(req.methodTypes) == 0 {
		req.methodTypes = []string{"card"}
	}
	if !contains(req.methodTypes, "card") {
		return req, invalidRequest("payment_intent_incompatible_payment_method", "payment_method_types",
			"The simulator supports the card payment method type only.")
	}
	md := p.dicts["metadata"]
	if len(md) > maxMetadataKeys {
		return req, invalidRequest("", "metadata", "Invalid metadata: metadata can have at most %d keys.", maxMetadataKeys)
	}
	req.metadata = map[string]string{}
	for k, v := range md {
		switch {
		case len(k) > maxMetadataKeyLen:
			return req, invalidRequest("", "metadata["+k+"]",
				"Invalid metadata: keys can be at most %d characters long.", maxMetadataKeyLen)
		case len(v) > maxMetadataValueLen:
			return req, invalidRequest("", "metadata["+k+"]",
				"Invalid metadata: values can be at most %d characters long.", maxMetadataValueLen)
		case v != "":
			req.metadata[k] = v
		}
	}
	if req.confirm && req.methodID == "" {
		return req, invalidRequest("payment_intent_unexpected_state", "payment_method",
			"You cannot confirm this PaymentIntent because it's missing a payment method. "+
				"Update the PaymentIntent with a payment method and then confirm it again.")
	}
	if req.expand, e = parseExpand(p.lists["expand"], ""); e != nil {
		return req, e
	}
	return req, nil
}

func hasPrefixKey(values url.Values, prefix string) bool {
	for k := range values {
		if strings.HasPrefix(k, prefix) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func isCurrency(c string) bool {
	if len(c) != 3 {
		return false
	}
	for i := 0; i < 3; i++ {
		if c[i] < 'a' || c[i] > 'z' {
			return false
		}
	}
	return true
}

// handleCreate serves POST /v1/payment_intents through the idempotency layer.
// It returns the answer to send; handled reports that the connection was
// already dealt with (a hold aborted by Reset or Close).
func (s *Server) handleCreate(w http.ResponseWriter, r *http.Request, c *call, release <-chan struct{}) (resp response, note string, handled bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		return errorResponse(invalidRequest("", "", "The request body could not be read: %v", err)), "invalid", false
	}
	values, err := url.ParseQuery(string(body))
	if err != nil {
		return errorResponse(invalidRequest("", "", "The request body is not valid form encoding.")), "invalid", false
	}
	if len(c.key) > 255 {
		return errorResponse(invalidRequest("", "",
			"Idempotency-Key header cannot be longer than 255 characters.")), "invalid", false
	}

	var entry *keyEntry
	if c.key != "" {
		fp := r.Method + " " + r.URL.Path + "\n" + canonicalForm(values)
		s.mu.Lock()
		now := s.now()
		e, res := s.keys.begin(c.key, fp, c.requestID, now)
		switch res {
		case replay:
			s.ledger.replay(c.key, now)
			stored := e.resp
			stored.header = stored.header.Clone()
			if stored.header == nil {
				stored.header = http.Header{}
			}
			stored.header.Set("Idempotent-Replayed", "true")
			stored.header.Set("Original-Request", e.requestID)
			s.mu.Unlock()
			return stored, "replayed", false
		case mismatch:
			s.mu.Unlock()
			return errorResponse(&apiError{
				status: http.StatusBadRequest,
				Type:   typeIdempotency,
				Message: fmt.Sprintf("Keys for idempotent requests can only be used with the same parameters they "+
					"were first used with. Try using a key other than '%s' if you meant to execute a different request.",
					sanitize(c.key)),
			}), "idempotency_mismatch", false
		case inUse:
			s.mu.Unlock()
			return errorResponse(statusError(http.StatusConflict, "idempotency_key_in_use", fmt.Sprintf(
				"There is currently another in-progress request using this Idempotent Key (that probably means "+
					"you submitted twice, and the other request is still going through): %s. Please try again later.",
				sanitize(c.key)))), "idempotency_in_use", false
		}
		entry = e
		s.mu.Unlock()
	}

	if c.step.ProcessingMS > 0 && !s.pause(millis(c.step.ProcessingMS), release) {
		s.abandon(entry)
		closeConnection(w)
		return response{}, "aborted", true
	}
	req, ae := validateCreate(values)
	if ae != nil {
		s.abandon(entry)
		return errorResponse(ae), "invalid", false
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	resp = s.executeLocked(req, c)
	note = "executed"
	if st := c.step.commitStatus(); st != 0 {
		resp = errorResponse(c.step.apiError(st))
		note = "after_commit"
	}
	if entry != nil {
		if n := s.keys.finish(entry, resp); s.keyDrops.add(n) {
			s.log.Warn("idempotency key cap reached: oldest keys dropped before their time",
				zap.Int("dropped", s.keyDrops.total), zap.Int("max_idempotency_keys", s.keys.max))
		}
	}
	return resp, note, false
}

// abandon releases a held key without storing anything.
func (s *Server) abandon(e *keyEntry) {
	if e == nil {
		return
	}
	s.mu.Lock()
	s.keys.abandon(e)
	s.mu.Unlock()
}

// executeLocked creates the PaymentIntent and, with confirm, decides its
// outcome. s.mu must be held.
func (s *Server) executeLocked(req createRequest, c *call) response {
	now := s.now().Round(0) // wall clock only: cursors compare wall times
	entry := s.ledger.execution(c.key, now)
	var method *testMethod
	if req.methodID != "" {
		t, ok := lookupMethod(req.methodID)
		if !ok {
			return errorResponse(resourceMissing(http.StatusBadRequest, "payment_method", "PaymentMethod", req.methodID))
		}
		method = &t
	}
	id := newID("pi_", 24)
	pi := &intent{
		id:                 id,
		clientSecret:       id + "_secret_" + newID("", 25),
		created:            now,
		searchableAt:       now.Add(s.searchLag),
		amount:             req.amount,
		currency:           req.currency,
		customer:           req.customer,
		description:        req.description,
		metadata:           req.metadata,
		method:             method,
		paymentMethodTypes: req.methodTypes,
		setupFutureUsage:   req.setupFutureUsage,
		returnURL:          req.returnURL,
		idempotencyKey:     c.key,
	}
	var failed *decline
	switch {
	case !req.confirm && method == nil:
		pi.status = statusRequiresPaymentMethod
	case !req.confirm:
		pi.status = statusRequiresConfirmation
	case method != nil:
		if d, ok := c.step.declines(); ok {
			// A scripted decline: the issuer refuses whatever the payment method.
			failed = s.failLocked(pi, d, now)
			break
		}
		failed = s.confirmLocked(pi, req, now)
	default:
		failed = s.confirmLocked(pi, req, now)
	}
	if n := s.intents.add(pi); s.intentDrops.add(n) {
		s.log.Warn("payment intent cap reached: oldest payment intents dropped",
			zap.Int("dropped", s.intentDrops.total), zap.Int("max_payment_intents", s.intents.max))
	}
	s.ledger.effect(entry, pi)
	s.emitLocked(pi)
	rendered := s.renderIntent(pi, req.expand)
	if failed == nil {
		return jsonResponse(http.StatusOK, rendered)
	}
	e := failed.apiError()
	e.Charge = pi.charge.id
	e.PaymentIntent = rendered
	e.PaymentMethod = s.renderPaymentMethod(*method)
	e.RequestLogURL = "https://dashboard.stripe.com/test/logs/" + c.requestID
	return errorResponse(e)
}

// failLocked declines pi's payment with d: the PaymentIntent waits for another payment
// method with d as its last error, beside a failed charge. s.mu must be held.
func (s *Server) failLocked(pi *intent, d decline, now time.Time) *decline {
	pi.status = statusRequiresPaymentMethod
	pi.lastError = &d
	pi.charge = &charge{id: newID("ch_", 24), created: now, status: "failed", decline: &d}
	return &d
}

// confirmLocked confirms pi with its payment method and returns the decline
// when the payment failed. s.mu must be held.
func (s *Server) confirmLocked(pi *intent, req createRequest, now time.Time) *decline {
	m := pi.method
	kind := m.kind
	if m.first > 0 {
		s.confirmations[m.id]++
		if s.confirmations[m.id] > m.first {
			kind = approve
		}
	}
	newCharge := func(status string, d *decline) {
		pi.charge = &charge{id: newID("ch_", 24), created: now, status: status, decline: d}
	}
	fail := func(d decline) *decline { return s.failLocked(pi, d, now) }
	switch kind {
	case approve:
		pi.status = statusSucceeded
		newCharge("succeeded", nil)
	case declined:
		return fail(m.decline)
	case processing:
		pi.status = statusProcessing
		newCharge("pending", nil)
		if s.processingTime > 0 {
			pi.settleAt = now.Add(s.processingTime)
		}
	case authenticate:
		switch {
		case req.offSession && m.offSessionApproves:
			pi.status = statusSucceeded
			newCharge("succeeded", nil)
		case req.offSession || req.errorOnRequiresAction:
			return fail(newDecline("authentication_required"))
		default:
			pi.status = statusRequiresAction
		}
	}
	return nil
}
