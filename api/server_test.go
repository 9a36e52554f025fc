package api

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/paygate/paygate/apikey"
	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/jobs"
	"github.com/paygate/paygate/migrations"
	"github.com/paygate/paygate/reconcile"
	"github.com/paygate/paygate/store"
)

// fakeCharges is the charge engine of the server tests: Create and Reattempt answer resp and
// err; Get knows the charges in known.
type fakeCharges struct {
	mu      sync.Mutex
	resp    charge.Response
	err     error
	known   map[string]*charge.Charge
	creates int
	lists   []charge.ListParams
}

func (f *fakeCharges) Create(context.Context, charge.CreateParams) (charge.Response, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.creates++
	return f.resp, f.err
}

func (f *fakeCharges) Get(_ context.Context, merchantID, id string) (*charge.Charge, error) {
	if c, ok := f.known[id]; ok && c.MerchantID == merchantID {
		return c, nil
	}
	return nil, charge.ErrNotFound
}

func (f *fakeCharges) List(_ context.Context, p charge.ListParams) ([]charge.Charge, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists = append(f.lists, p)
	return nil, false, nil
}

func (f *fakeCharges) Reattempt(context.Context, charge.ReattemptParams) (charge.Response, error) {
	return f.resp, f.err
}

// fakeReview is an empty review queue whose charges have the audit trail events and the
// reconciliation rec.
type fakeReview struct {
	mu     sync.Mutex
	limits []int
	events []charge.Event
	rec    *reconcile.State
}

func (f *fakeReview) ReviewQueue(_ context.Context, _ string, limit int) ([]reconcile.ReviewItem, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.limits = append(f.limits, limit)
	return nil, nil
}

func (f *fakeReview) ChargeTrail(context.Context, string, string) ([]charge.Event, *reconcile.State, error) {
	return f.events, f.rec, nil
}

func (f *fakeReview) Chain(context.Context, string, string) ([]charge.ChainStep, error) {
	return nil, nil
}

// fakeRecon finds nothing at the processor, and its charges always need a reconciliation
// first.
type fakeRecon struct {
	mu          sync.Mutex
	resolutions []reconcile.ManualResolution
}

func (*fakeRecon) Check(context.Context, string) (reconcile.Check, error) {
	return reconcile.Check{}, nil
}

func (f *fakeRecon) Resolve(_ context.Context, m reconcile.ManualResolution) (*charge.Charge, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resolutions = append(f.resolutions, m)
	return nil, reconcile.ErrReconcileFirst
}

type fakeJobs struct{}

func (fakeJobs) Dead(context.Context, jobs.DeadParams) ([]jobs.DeadJob, string, error) {
	return nil, "", nil
}

func (fakeJobs) Replay(context.Context, int64, jobs.ReplayParams) (jobs.DeadJob, error) {
	return jobs.DeadJob{}, jobs.ErrNotFound
}

type fakeReady struct{ err error }

func (f fakeReady) Ready(context.Context) error { return f.err }

// server is the bundle of the server tests: the handler with fakes behind it and a key for
// each role of merchant "m".
type server struct {
	e       *echo.Echo
	charges *fakeCharges
	review  *fakeReview
	recon   *fakeRecon
	keys    map[apikey.Role]string
	logs    *observer.ObservedLogs
}

// setup returns a server whose charge engine knows ch_known of merchant "m"; ready is the
// database's readiness.
func setup(t *testing.T, ready error) *server {
	t.Helper()
	core, logs := observer.New(zapcore.DebugLevel)
	s := &server{
		charges: &fakeCharges{known: map[string]*charge.Charge{
			"ch_known": {ID: "ch_known", MerchantID: "m", Amount: 1, Currency: "usd", Status: charge.StatusPending, CreatedAt: time.Now()},
		}},
		review: &fakeReview{},
		recon:  &fakeRecon{},
		keys:   map[apikey.Role]string{},
		logs:   logs,
	}
	auth := &countingAuth{known: map[apikey.Hash]apikey.Principal{}}
	for _, r := range []apikey.Role{apikey.RoleCheckout, apikey.RoleOperator, apikey.RoleAuditor} {
		k, err := apikey.Generate()
		if err != nil {
			t.Fatal(err)
		}
		auth.known[k.Hash] = apikey.Principal{KeyID: "key_" + string(r), MerchantID: "m", Role: r}
		s.keys[r] = k.Secret
	}
	s.e = New(Config{
		Log: zap.New(core), Auth: auth, Ready: fakeReady{ready}, Charges: s.charges, Jobs: fakeJobs{},
		Review: s.review, Recon: s.recon, Limits: lim, Registry: prometheus.NewRegistry(), Unavailable: store.Unavailable,
	})
	return s
}

// do sends a request as role (none when empty) with the headers in kv (name, value, ...).
func (s *server) do(t *testing.T, method, target string, role apikey.Role, body string, kv ...string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, target, strings.NewReader(body))
	if role != "" {
		req.Header.Set("Authorization", "Bearer "+s.keys[role])
	}
	for i := 0; i+1 < len(kv); i += 2 {
		req.Header.Set(kv[i], kv[i+1])
	}
	rec := httptest.NewRecorder()
	s.e.ServeHTTP(rec, req)
	return rec
}

// errorOf returns the error object of an error answer, failing when the body is not the
// contract's envelope with its four fields.
func errorOf(t *testing.T, rec *httptest.ResponseRecorder) map[string]any {
	t.Helper()
	var env map[string]map[string]any
	if err := json.Unmarshal(rec.Body.Bytes(), &env); err != nil {
		t.Fatalf("got body %s, want the error envelope: %v", rec.Body, err)
	}
	e, ok := env["error"]
	if !ok || len(env) != 1 {
		t.Fatalf("got body %s, want {\"error\": {...}}", rec.Body)
	}
	for _, f := range []string{"type", "code", "message", "param"} {
		if _, ok := e[f].(string); !ok {
			t.Fatalf("got body %s, want error.%s as a string", rec.Body, f)
		}
	}
	return e
}

const validCharge = `{"amount":1000,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer"}`

// TestErrorEnvelope: every error, the handlers' and echo's own (no route, wrong method, body
// too large), carries type, code, message and param, param empty when no parameter is at
// fault.
func TestErrorEnvelope(t *testing.T) {
	t.Parallel()
	s := setup(t, nil)
	big := `{"metadata":{"a":"` + strings.Repeat("x", 70<<10) + `"}}`
	for _, tc := range []struct {
		name, method, target string
		role                 apikey.Role
		body                 string
		headers              []string
		engineErr            error
		wantStatus           int
		wantCode, wantParam  string
	}{
		{name: "no key", method: http.MethodGet, target: "/v1/charges", wantStatus: 401, wantCode: "unauthorized"},
		{name: "wrong role", method: http.MethodGet, target: "/v1/jobs/dead", role: apikey.RoleCheckout, wantStatus: 403, wantCode: "forbidden"},
		{name: "no such charge", method: http.MethodGet, target: "/v1/charges/ch_nope", role: apikey.RoleCheckout, wantStatus: 404, wantCode: "resource_missing"},
		{name: "no such route", method: http.MethodGet, target: "/v1/nothing", role: apikey.RoleCheckout, wantStatus: 404, wantCode: "resource_missing"},
		{name: "no route at all", method: http.MethodGet, target: "/nothing", wantStatus: 404, wantCode: "resource_missing"},
		// As Stripe answers a method a path does not take: an unrecognized request.
		{name: "wrong method", method: http.MethodPut, target: "/v1/charges", role: apikey.RoleCheckout, wantStatus: 404, wantCode: "resource_missing"},
		{name: "body too large", method: http.MethodPost, target: "/v1/charges", role: apikey.RoleCheckout, body: big,
			headers: []string{"Idempotency-Key", "k1"}, wantStatus: 413, wantCode: "body_too_large"},
		{name: "body missing", method: http.MethodPost, target: "/v1/charges", role: apikey.RoleCheckout,
			headers: []string{"Idempotency-Key", "k1"}, wantStatus: 400, wantCode: "body_missing"},
		{name: "invalid json", method: http.MethodPost, target: "/v1/charges", role: apikey.RoleCheckout, body: `{"amount":`,
			headers: []string{"Idempotency-Key", "k1"}, wantStatus: 400, wantCode: "invalid_json"},
		{name: "card data", method: http.MethodPost, target: "/v1/charges", role: apikey.RoleCheckout, body: `{"n":"4242424242424242"}`,
			headers: []string{"Idempotency-Key", "k1"}, wantStatus: 400, wantCode: charge.CodeCardData},
		{name: "card data with zero width spaces", method: http.MethodPost, target: "/v1/charges", role: apikey.RoleCheckout,
			body:    "{\"amount\":1000,\"currency\":\"usd\",\"payment_method\":\"pm_card_visa\",\"initiator\":\"customer\",\"metadata\":{\"n\":\"4242\u200b4242\u200b4242\u200b4242\"}}",
			headers: []string{"Idempotency-Key", "k1"}, wantStatus: 400, wantCode: charge.CodeCardData},
		{name: "key missing", method: http.MethodPost, target: "/v1/charges", role: apikey.RoleCheckout, body: validCharge,
			wantStatus: 400, wantCode: "idempotency_key_missing", wantParam: "Idempotency-Key"},
		{name: "key in use", method: http.MethodPost, target: "/v1/charges", role: apikey.RoleCheckout, body: validCharge,
			headers: []string{"Idempotency-Key", "k1"}, engineErr: charge.ErrKeyInUse, wantStatus: 409, wantCode: "idempotency_key_in_use"},
		{name: "key reused", method: http.MethodPost, target: "/v1/charges", role: apikey.RoleCheckout, body: validCharge,
			headers: []string{"Idempotency-Key", "k1"}, engineErr: charge.ErrKeyReused, wantStatus: 422, wantCode: "idempotency_key_reused"},
		{name: "reattempt refused", method: http.MethodPost, target: "/v1/charges", role: apikey.RoleCheckout, body: validCharge,
			headers: []string{"Idempotency-Key", "k1"}, engineErr: &charge.ReattemptRefusedError{Verdict: decline.Verdict{Reason: "never_reattempt"}},
			wantStatus: 422, wantCode: "reattempt_not_allowed"},
		{name: "duplicate reference", method: http.MethodPost, target: "/v1/charges", role: apikey.RoleCheckout, body: validCharge,
			headers: []string{"Idempotency-Key", "k1"}, engineErr: &charge.DuplicateReferenceError{ChargeID: "ch_x"},
			wantStatus: 409, wantCode: "duplicate_reference", wantParam: "reference"},
		{name: "duplicate reattempt", method: http.MethodPost, target: "/v1/charges/ch_known/reattempt", role: apikey.RoleCheckout, body: `{}`,
			headers: []string{"Idempotency-Key", "k1"}, engineErr: &charge.DuplicateReattemptError{ChargeID: "ch_x"},
			wantStatus: 409, wantCode: "duplicate_reattempt"},
		{name: "reconcile first", method: http.MethodPost, target: "/v1/charges/ch_known/resolve", role: apikey.RoleOperator,
			body: `{"outcome":"failed","note":"n"}`, wantStatus: 409, wantCode: "reconcile_first"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := s
			if tc.engineErr != nil {
				s = setup(t, nil)
				s.charges.err = tc.engineErr
			}
			rec := s.do(t, tc.method, tc.target, tc.role, tc.body, tc.headers...)
			if rec.Code != tc.wantStatus {
				t.Fatalf("got %d %s, want %d", rec.Code, rec.Body, tc.wantStatus)
			}
			e := errorOf(t, rec)
			if e["code"] != tc.wantCode || e["param"] != tc.wantParam {
				t.Fatalf("got code %q param %q, want %q %q", e["code"], e["param"], tc.wantCode, tc.wantParam)
			}
			if tc.wantCode == "idempotency_key_in_use" && rec.Header().Get("Retry-After") == "" {
				t.Fatal("409 idempotency_key_in_use without Retry-After")
			}
		})
	}
}

// TestEchoErrorEnvelope: echo's own errors leave in the envelope with param.
func TestEchoErrorEnvelope(t *testing.T) {
	t.Parallel()
	e := echo.New()
	e.HTTPErrorHandler = errorHandler(zap.NewNop(), nil)
	for _, tc := range []struct {
		err      error
		wantCode string
	}{
		{echo.ErrNotFound, "resource_missing"},
		{echo.ErrMethodNotAllowed, "method_not_allowed"},
		{echo.ErrStatusRequestEntityTooLarge, "body_too_large"},
		{echo.ErrBadRequest, "invalid_request"},
		{echo.ErrUnauthorized, "unauthorized"},
		{echo.ErrForbidden, "forbidden"},
		{echo.ErrServiceUnavailable, "service_unavailable"},
		{errors.New("boom"), "internal_error"},
	} {
		rec := httptest.NewRecorder()
		e.HTTPErrorHandler(tc.err, e.NewContext(httptest.NewRequest(http.MethodGet, "/", nil), rec))
		if got := errorOf(t, rec); got["code"] != tc.wantCode || got["param"] != "" {
			t.Errorf("%v: got %s, want %s with param \"\"", tc.err, rec.Body, tc.wantCode)
		}
	}
}

// TestReattemptRefusedNotBefore: the 422's not_before is written as the 402's decline block
// writes its own (RFC 3339 with the fraction of a second), so that a client retrying at
// exactly not_before is not early.
func TestReattemptRefusedNotBefore(t *testing.T) {
	t.Parallel()
	s := setup(t, nil)
	nb := time.Date(2026, 3, 1, 12, 30, 15, 123_456_000, time.FixedZone("x", 3600))
	s.charges.err = &charge.ReattemptRefusedError{Verdict: decline.Verdict{Reason: "too_early", NotBefore: nb}}
	rec := s.do(t, http.MethodPost, "/v1/charges", apikey.RoleCheckout, validCharge, "Idempotency-Key", "k1")
	if rec.Code != http.StatusUnprocessableEntity {
		t.Fatalf("got %d %s, want 422", rec.Code, rec.Body)
	}
	got, _ := errorOf(t, rec)["not_before"].(string)
	blk, err := json.Marshal(charge.ReattemptJSON{NotBefore: &[]time.Time{nb.UTC()}[0]})
	if err != nil {
		t.Fatal(err)
	}
	var inBlock struct {
		NotBefore string `json:"not_before"`
	}
	if err := json.Unmarshal(blk, &inBlock); err != nil {
		t.Fatal(err)
	}
	if got != inBlock.NotBefore || got != "2026-03-01T11:30:15.123456Z" {
		t.Fatalf("got not_before %q, want %q as in the decline block", got, inBlock.NotBefore)
	}
	if at, err := time.Parse(time.RFC3339Nano, got); err != nil || !at.Equal(nb) {
		t.Fatalf("not_before %q reads back as %v (%v), want %v", got, at, err, nb)
	}
}

// TestIdempotentReplayed: an answer replayed from storage carries Idempotent-Replayed: true;
// a first answer does not carry the header.
func TestIdempotentReplayed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		target   string
		body     string
		replayed bool
		want     string
	}{
		{"first charge", "/v1/charges", validCharge, false, ""},
		{"replayed charge", "/v1/charges", validCharge, true, "true"},
		{"first reattempt", "/v1/charges/ch_known/reattempt", `{}`, false, ""},
		{"replayed reattempt", "/v1/charges/ch_known/reattempt", `{}`, true, "true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := setup(t, nil)
			s.charges.resp = charge.Response{Status: http.StatusPaymentRequired, Body: []byte(`{"id":"ch_1"}`), Replayed: tc.replayed}
			rec := s.do(t, http.MethodPost, tc.target, apikey.RoleCheckout, tc.body, "Idempotency-Key", "k1")
			if rec.Code != http.StatusPaymentRequired || rec.Body.String() != `{"id":"ch_1"}` {
				t.Fatalf("got %d %s, want the engine's answer", rec.Code, rec.Body)
			}
			_, present := rec.Header()["Idempotent-Replayed"]
			if got := rec.Header().Get("Idempotent-Replayed"); got != tc.want || present != tc.replayed {
				t.Fatalf("got Idempotent-Replayed %q (present: %v), want %q", got, present, tc.want)
			}
		})
	}
}

// TestIdempotencyKeyIsOpaque: an Idempotency-Key is the caller's opaque token, not data: a
// key of digits that happens to pass the Luhn check (a millisecond timestamp does one time in
// ten) is taken as a key. Card data in the body is still refused before any other check.
func TestIdempotencyKeyIsOpaque(t *testing.T) {
	t.Parallel()
	s := setup(t, nil)
	// 1764504000001 is a millisecond timestamp of 13 digits that passes the Luhn check.
	rec := s.do(t, http.MethodPost, "/v1/charges", apikey.RoleCheckout, validCharge, "Idempotency-Key", "1764504000001")
	if rec.Code == http.StatusBadRequest || s.charges.creates != 1 {
		t.Fatalf("digits-only key: got %d %s after %d creates, want the charge created", rec.Code, rec.Body, s.charges.creates)
	}
	// The card check comes before any other check of the request.
	s = setup(t, nil)
	rec = s.do(t, http.MethodPost, "/v1/charges", apikey.RoleCheckout, `{"n":"4242424242424242"}`)
	if rec.Code != http.StatusBadRequest || errorOf(t, rec)["code"] != charge.CodeCardData {
		t.Fatalf("card in the body without a key: got %d %s, want 400 %s", rec.Code, rec.Body, charge.CodeCardData)
	}
}

// TestListStartingAfterMissing: a cursor naming no charge of the caller's is 404
// resource_missing on starting_after, as Stripe answers it, not an empty page.
func TestListStartingAfterMissing(t *testing.T) {
	t.Parallel()
	s := setup(t, nil)
	s.charges.known["ch_other"] = &charge.Charge{ID: "ch_other", MerchantID: "other", CreatedAt: time.Now()}
	for _, id := range []string{"ch_nope", "ch_other"} {
		rec := s.do(t, http.MethodGet, "/v1/charges?starting_after="+id, apikey.RoleCheckout, "")
		if rec.Code != http.StatusNotFound {
			t.Fatalf("starting_after=%s: got %d %s, want 404", id, rec.Code, rec.Body)
		}
		e := errorOf(t, rec)
		if e["code"] != "resource_missing" || e["param"] != "starting_after" || e["type"] != typeInvalidRequest {
			t.Fatalf("starting_after=%s: got %s, want resource_missing on starting_after", id, rec.Body)
		}
	}
	rec := s.do(t, http.MethodGet, "/v1/charges?starting_after=ch_known&limit=2", apikey.RoleCheckout, "")
	if rec.Code != http.StatusOK {
		t.Fatalf("starting_after=ch_known: got %d %s, want 200", rec.Code, rec.Body)
	}
	if n := len(s.charges.lists); n != 1 || s.charges.lists[0].StartingAfter != "ch_known" {
		t.Fatalf("got list calls %+v, want one after ch_known", s.charges.lists)
	}
}

// TestReadyzHidesDetails: readiness tells the (unauthenticated) caller what is wrong in
// general terms; the details go to the log, without a password.
func TestReadyzHidesDetails(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		err        error
		wantReason string
		wantLogged string
	}{
		{"unreachable", errors.New("store: schema version: failed to connect to `user=paygate database=postgres`: " +
			"127.0.0.1:25432 (127.0.0.1): dial error: connect: connection refused (postgres://paygate:hunter2@127.0.0.1:25432/postgres password=hunter2)"),
			"database unreachable", "connection refused"},
		{"schema behind", fmtErr(migrations.ErrSchemaBehind), "database schema is behind this binary", "binary at 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := setup(t, tc.err)
			rec := s.do(t, http.MethodGet, "/readyz", "", "")
			if rec.Code != http.StatusServiceUnavailable {
				t.Fatalf("got %d, want 503", rec.Code)
			}
			var body map[string]string
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body["reason"] != tc.wantReason || body["status"] != "unavailable" {
				t.Fatalf("got %s, want reason %q", rec.Body, tc.wantReason)
			}
			for _, secret := range []string{"user=", "database=", "25432", "127.0.0.1", "hunter2", "binary at"} {
				if strings.Contains(rec.Body.String(), secret) {
					t.Fatalf("got %s, want no %q", rec.Body, secret)
				}
			}
			logged := s.logs.FilterMessage("not ready").All()
			if len(logged) != 1 {
				t.Fatalf("got %d readiness log lines, want 1", len(logged))
			}
			if line := fmt.Sprint(logged[0].ContextMap()); strings.Contains(line, "hunter2") || !strings.Contains(line, tc.wantLogged) {
				t.Fatalf("logged %s, want the error without the password", line)
			}
		})
	}
}

func fmtErr(err error) error { return fmt.Errorf("%w (database at 3, binary at 4)", err) }

// TestReviewRoles: operators and auditors read the review queue; only operators reconcile
// and resolve; checkout keys do none of it.
func TestReviewRoles(t *testing.T) {
	t.Parallel()
	s := setup(t, nil)
	note := `{"outcome":"failed","note":"n"}`
	for _, tc := range []struct {
		method, target string
		role           apikey.Role
		want           int
	}{
		{http.MethodGet, "/v1/review", apikey.RoleOperator, 200},
		{http.MethodGet, "/v1/review", apikey.RoleAuditor, 200},
		{http.MethodGet, "/v1/review", apikey.RoleCheckout, 403},
		{http.MethodPost, "/v1/charges/ch_known/reconcile", apikey.RoleOperator, 200},
		{http.MethodPost, "/v1/charges/ch_known/reconcile", apikey.RoleAuditor, 403},
		{http.MethodPost, "/v1/charges/ch_known/reconcile", apikey.RoleCheckout, 403},
		{http.MethodPost, "/v1/charges/ch_known/resolve", apikey.RoleOperator, 409}, // reconcile first
		{http.MethodPost, "/v1/charges/ch_known/resolve", apikey.RoleAuditor, 403},
		{http.MethodPost, "/v1/charges/ch_known/resolve", apikey.RoleCheckout, 403},
	} {
		if rec := s.do(t, tc.method, tc.target, tc.role, note); rec.Code != tc.want {
			t.Errorf("%s %s as %s: got %d %s, want %d", tc.method, tc.target, tc.role, rec.Code, rec.Body, tc.want)
		}
	}
}

// TestReviewQueueParameters: the review queue takes limit and refuses any other parameter,
// as the other endpoints do.
func TestReviewQueueParameters(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		query      string
		wantStatus int
		wantCode   string
		wantParam  string
		wantLimit  int
	}{
		{"", 200, "", "", 100},
		{"limit=5", 200, "", "", 5},
		{"limit=0", 400, "parameter_invalid", "limit", 0},
		{"limit=501", 400, "parameter_invalid", "limit", 0},
		{"status=pending", 400, "parameter_unknown", "status", 0},
		{"limit=5&cursor=x", 400, "parameter_unknown", "cursor", 0},
	} {
		t.Run("?"+tc.query, func(t *testing.T) {
			t.Parallel()
			s := setup(t, nil)
			rec := s.do(t, http.MethodGet, "/v1/review?"+tc.query, apikey.RoleAuditor, "")
			if rec.Code != tc.wantStatus {
				t.Fatalf("got %d %s, want %d", rec.Code, rec.Body, tc.wantStatus)
			}
			if tc.wantStatus != 200 {
				if e := errorOf(t, rec); e["code"] != tc.wantCode || e["param"] != tc.wantParam {
					t.Fatalf("got %s, want %s on %q", rec.Body, tc.wantCode, tc.wantParam)
				}
				if len(s.review.limits) != 0 {
					t.Fatalf("the queue was read: %v", s.review.limits)
				}
				return
			}
			if len(s.review.limits) != 1 || s.review.limits[0] != tc.wantLimit {
				t.Fatalf("got queue reads %v, want one of %d", s.review.limits, tc.wantLimit)
			}
		})
	}
}

// TestResolveIsTheOperators: a manual resolution is asked of the reconciler as the operator
// gave it, with who asked and how recent the inconclusive check must be; a charge that needs
// a reconciliation first is answered 409 reconcile_first.
func TestResolveIsTheOperators(t *testing.T) {
	t.Parallel()
	s := setup(t, nil)
	got := s.do(t, http.MethodPost, "/v1/charges/ch_known/resolve", apikey.RoleOperator, `{"outcome":"declined","note":"issuer confirmed"}`)
	if e := errorOf(t, got); got.Code != 409 || e["code"] != "reconcile_first" {
		t.Fatalf("resolve: got %d %s, want 409 reconcile_first", got.Code, got.Body)
	}
	s.recon.mu.Lock()
	defer s.recon.mu.Unlock()
	want := reconcile.ManualResolution{MerchantID: "m", ChargeID: "ch_known", Outcome: charge.StatusDeclined,
		Note: "issuer confirmed", Actor: "operator:key_operator", Within: 10 * time.Minute}
	if len(s.recon.resolutions) != 1 || s.recon.resolutions[0] != want {
		t.Fatalf("resolutions: got %+v, want %+v", s.recon.resolutions, want)
	}
}
