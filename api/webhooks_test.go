package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stripe/stripe-go/v76/webhook"
	"go.uber.org/zap"

	"github.com/paygate/paygate/reconcile"
	"github.com/paygate/paygate/store"
)

const testWebhookSecret = "whsec_apiTestSecret"

// fakeReceiver records the events it receives, once per id, or fails with err.
type fakeReceiver struct {
	mu     sync.Mutex
	events []reconcile.Event
	seen   map[string]bool
	calls  int
	err    error
}

func (f *fakeReceiver) Receive(_ context.Context, e reconcile.Event) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	if f.err != nil {
		return false, f.err
	}
	if f.seen[e.ID] {
		return true, nil
	}
	f.seen[e.ID] = true
	f.events = append(f.events, e)
	return false, nil
}

// hookServer is the API with a webhook endpoint on a fixed clock.
type hookServer struct {
	*server
	recv *fakeReceiver
	reg  *prometheus.Registry
	now  time.Time
}

func setupHooks(t *testing.T, secret string) *hookServer {
	t.Helper()
	s := setup(t, nil)
	h := &hookServer{server: s, recv: &fakeReceiver{seen: map[string]bool{}}, reg: prometheus.NewRegistry(),
		now: time.Date(2030, 6, 1, 12, 0, 0, 0, time.UTC)}
	s.e = New(Config{Log: zap.NewNop(), Auth: &countingAuth{}, Ready: fakeReady{}, Charges: s.charges, Jobs: fakeJobs{},
		Review: s.review, Recon: &fakeRecon{}, Limits: lim, Registry: h.reg, Unavailable: store.Unavailable,
		Webhooks: WebhookConfig{Secret: secret, Receiver: h.recv, Now: func() time.Time { return h.now }}})
	return h
}

func eventBody(id, typ, chargeID string, amount int) string {
	return fmt.Sprintf(`{"id":%q,"object":"event","type":%q,"created":1906545600,"account":"acct_1","api_version":"2019-01-01",
		"data":{"object":{"id":"pi_1","object":"payment_intent","status":"succeeded","amount":%d,"currency":"usd",
		"payment_method":"pm_card_visa","metadata":{"paygate_charge_id":%q}}}}`, id, typ, amount, chargeID)
}

// post delivers body signed with secret at at (no header when secret is empty).
func (h *hookServer) post(t *testing.T, body, secret string, at time.Time) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(http.MethodPost, "/webhooks/stripe", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		sp := webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{Payload: []byte(body), Secret: secret, Timestamp: at})
		req.Header.Set("Stripe-Signature", sp.Header)
	}
	rec := httptest.NewRecorder()
	h.e.ServeHTTP(rec, req)
	return rec
}

// count is paygate_webhook_events_total{result=result}, -1 when it is not registered.
func (h *hookServer) count(result string) float64 {
	families, err := h.reg.Gather()
	if err != nil {
		return -1
	}
	for _, f := range families {
		if f.GetName() != "paygate_webhook_events_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == result {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return -1
}

// TestWebhookRefusals: a forged, missing or malformed signature, a timestamp outside 5
// minutes either way, a body over 64 KiB, or a signed body that is no event is answered 400
// and reaches nothing.
func TestWebhookRefusals(t *testing.T) {
	t.Parallel()
	good := eventBody("evt_1", "payment_intent.succeeded", "ch_1", 1000)
	huge := `{"id":"evt_big","object":"event","type":"payment_intent.succeeded","pad":"` + strings.Repeat("x", MaxWebhookBody) + `"}`
	for _, tc := range []struct {
		name     string
		deliver  func(h *hookServer) *httptest.ResponseRecorder
		wantCode string
	}{
		{"no signature", func(h *hookServer) *httptest.ResponseRecorder { return h.post(t, good, "", h.now) }, "signature_missing"},
		{"another secret", func(h *hookServer) *httptest.ResponseRecorder {
			return h.post(t, good, "whsec_forged", h.now)
		}, "signature_invalid"},
		{"a body other than the one signed", func(h *hookServer) *httptest.ResponseRecorder {
			req := httptest.NewRequest(http.MethodPost, "/webhooks/stripe", strings.NewReader(eventBody("evt_1", "payment_intent.succeeded", "ch_1", 1)))
			req.Header.Set("Stripe-Signature", webhook.GenerateTestSignedPayload(&webhook.UnsignedPayload{
				Payload: []byte(good), Secret: testWebhookSecret, Timestamp: h.now}).Header)
			rec := httptest.NewRecorder()
			h.e.ServeHTTP(rec, req)
			return rec
		}, "signature_invalid"},
		{"a garbled header", func(h *hookServer) *httptest.ResponseRecorder {
			req := httptest.NewRequest(http.MethodPost, "/webhooks/stripe", strings.NewReader(good))
			req.Header.Set("Stripe-Signature", "t=abc,v1")
			rec := httptest.NewRecorder()
			h.e.ServeHTTP(rec, req)
			return rec
		}, "signature_invalid"},
		{"signed 5 minutes and a second ago", func(h *hookServer) *httptest.ResponseRecorder {
			return h.post(t, good, testWebhookSecret, h.now.Add(-5*time.Minute-time.Second))
		}, "signature_expired"},
		{"signed 6 minutes ahead", func(h *hookServer) *httptest.ResponseRecorder {
			return h.post(t, good, testWebhookSecret, h.now.Add(6*time.Minute))
		}, "signature_expired"},
		{"over 64 KiB, signed", func(h *hookServer) *httptest.ResponseRecorder {
			return h.post(t, huge, testWebhookSecret, h.now)
		}, "body_too_large"},
		{"signed, not JSON", func(h *hookServer) *httptest.ResponseRecorder {
			return h.post(t, "not json", testWebhookSecret, h.now)
		}, "invalid_event"},
		{"signed, no id", func(h *hookServer) *httptest.ResponseRecorder {
			return h.post(t, `{"object":"event","type":"payment_intent.succeeded","data":{"object":{}}}`, testWebhookSecret, h.now)
		}, "invalid_event"},
		{"signed, a payment_intent event without one", func(h *hookServer) *httptest.ResponseRecorder {
			return h.post(t, `{"id":"evt_2","object":"event","type":"payment_intent.succeeded","data":{"object":{"object":"charge"}}}`,
				testWebhookSecret, h.now)
		}, "invalid_event"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := setupHooks(t, testWebhookSecret)
			rec := tc.deliver(h)
			if rec.Code != http.StatusBadRequest {
				t.Fatalf("got %d %s, want 400", rec.Code, rec.Body)
			}
			if code := errorOf(t, rec)["code"]; code != tc.wantCode {
				t.Fatalf("code: got %v, want %s", code, tc.wantCode)
			}
			if h.recv.calls != 0 {
				t.Fatalf("receiver: got %d calls, want none", h.recv.calls)
			}
			if h.count("received") != 1 || h.count("refused") != 1 || h.count("verified") != 0 {
				t.Fatalf("metrics: got received %v refused %v verified %v", h.count("received"), h.count("refused"), h.count("verified"))
			}
		})
	}
}

// TestWebhookAccepted: a verified event reaches the receiver once with what its payload
// names; a replay of its id is answered 200 and counted a duplicate; 4 minutes of clock
// difference are within the tolerance.
func TestWebhookAccepted(t *testing.T) {
	t.Parallel()
	h := setupHooks(t, testWebhookSecret)
	body := eventBody("evt_ok", "payment_intent.succeeded", "ch_9", 1999)
	for i, want := range []bool{false, true} {
		rec := h.post(t, body, testWebhookSecret, h.now.Add(-4*time.Minute))
		var got struct{ Received, Duplicate bool }
		if rec.Code != http.StatusOK || json.Unmarshal(rec.Body.Bytes(), &got) != nil || !got.Received || got.Duplicate != want {
			t.Fatalf("delivery %d: got %d %s, want 200 duplicate=%v", i+1, rec.Code, rec.Body, want)
		}
	}
	if len(h.recv.events) != 1 {
		t.Fatalf("events: got %d, want 1", len(h.recv.events))
	}
	e := h.recv.events[0]
	if e.ID != "evt_ok" || e.Type != "payment_intent.succeeded" || e.Account != "acct_1" || !e.ReceivedAt.Equal(h.now) ||
		e.Created.Unix() != 1906545600 {
		t.Fatalf("event: got %+v", e)
	}
	if in := e.Intent; in.ID != "pi_1" || in.ChargeID != "ch_9" || in.Amount != 1999 || in.Currency != "usd" || in.Status != "succeeded" {
		t.Fatalf("event's PaymentIntent: got %+v", in)
	}
	if h.count("received") != 2 || h.count("verified") != 2 || h.count("duplicate") != 1 || h.count("refused") != 0 {
		t.Fatalf("metrics: got received %v verified %v duplicate %v refused %v",
			h.count("received"), h.count("verified"), h.count("duplicate"), h.count("refused"))
	}

	// Another type of event is recorded too (the receiver decides what it means).
	if rec := h.post(t, `{"id":"evt_cus","object":"event","type":"customer.created","data":{"object":{"id":"cus_1"}}}`,
		testWebhookSecret, h.now); rec.Code != http.StatusOK {
		t.Fatalf("another type: got %d %s, want 200", rec.Code, rec.Body)
	}
}

// TestWebhookStoreDown: an event the store cannot record is answered 503, so the processor
// delivers it again.
func TestWebhookStoreDown(t *testing.T) {
	t.Parallel()
	h := setupHooks(t, testWebhookSecret)
	h.recv.err = fmt.Errorf("receive: %w", store.ErrUnavailable)
	rec := h.post(t, eventBody("evt_1", "payment_intent.succeeded", "ch_1", 1000), testWebhookSecret, h.now)
	if rec.Code != http.StatusServiceUnavailable || errorOf(t, rec)["code"] != "database_unavailable" {
		t.Fatalf("got %d %s, want 503 database_unavailable", rec.Code, rec.Body)
	}
}

// TestWebhookWithoutSecret: without STRIPE_WEBHOOK_SECRET there is no endpoint.
func TestWebhookWithoutSecret(t *testing.T) {
	t.Parallel()
	h := setupHooks(t, "")
	rec := h.post(t, eventBody("evt_1", "payment_intent.succeeded", "ch_1", 1000), testWebhookSecret, h.now)
	if rec.Code != http.StatusNotFound || h.recv.calls != 0 {
		t.Fatalf("got %d %s (%d calls), want 404 and nothing received", rec.Code, rec.Body, h.recv.calls)
	}
}
