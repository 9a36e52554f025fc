package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/event/verify"
)

// receiver is a merchant's webhook endpoint: an HTTP server that records every delivery and
// answers what answer says (200 when nil).
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []delivery
	answer func(n int, d delivery) int // n: the delivery's number, from 1
	// arrived receives every delivery as it arrives.
	arrived chan delivery
}

type delivery struct {
	at        time.Time
	eventID   string
	signature string
	body      []byte
	event     map[string]any
}

func newReceiver(t *testing.T, answer func(n int, d delivery) int) *receiver {
	t.Helper()
	r := &receiver{answer: answer, arrived: make(chan delivery, 100)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		b, _ := io.ReadAll(req.Body)
		d := delivery{at: time.Now(), eventID: req.Header.Get("Paygate-Event-Id"),
			signature: req.Header.Get("Paygate-Signature"), body: b}
		_ = json.Unmarshal(b, &d.event)
		r.mu.Lock()
		r.got = append(r.got, d)
		n := len(r.got)
		r.mu.Unlock()
		status := http.StatusOK
		if r.answer != nil {
			status = r.answer(n, d)
		}
		if req.Header.Get("Content-Type") != "application/json" {
			status = http.StatusUnsupportedMediaType
		}
		w.WriteHeader(status)
		r.arrived <- d
	}))
	t.Cleanup(r.Close)
	return r
}

// deliveries returns what the receiver got so far.
func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

// next waits for the next delivery.
func (r *receiver) next(t *testing.T, within time.Duration) delivery {
	t.Helper()
	select {
	case d := <-r.arrived:
		return d
	case <-time.After(within):
		t.Fatalf("no delivery within %s", within)
		return delivery{}
	}
}

// endpoint registers url for the merchant's events of types, and returns its id and secret.
func (g *gateway) endpoint(operator, url string, types ...string) (string, string) {
	g.t.Helper()
	b, _ := json.Marshal(map[string]any{"url": url, "events": types})
	r := g.do(http.MethodPost, "/v1/webhook_endpoints", operator, nil, string(b))
	if r.status != http.StatusOK {
		g.t.Fatalf("POST /v1/webhook_endpoints: got %d %s", r.status, r.body)
	}
	m := r.json(g.t)
	return m["id"].(string), m["secret"].(string)
}

// TestEventDeliveredOnSettlement: a charge answered 202 pending and settled by
// reconciliation is delivered to the merchant's endpoint as charge.succeeded within 2 s of
// its settlement, signed with the endpoint's secret (a wrong secret fails the receiver's
// check), and GET /v1/events shows it with its delivery.
func TestEventDeliveredOnSettlement(t *testing.T) {
	t.Parallel()
	g := startGateway(t, "PAYGATE_WEBHOOK_ALLOW_HTTP", "1", "PAYGATE_RECONCILE_SCHEDULE", "1s,2s,1h",
		"PAYGATE_RECONCILE_SWEEP", "1s")
	k, op := g.key("m_events", "checkout"), g.key("m_events", "operator")
	recv := newReceiver(t, nil)
	_, secret := g.endpoint(op, recv.URL, "charge.succeeded")

	g.script(`[{"status":500,"after_commit":true}]`)
	first := g.charge(k, "ev1", visa)
	if first.status != http.StatusAccepted {
		t.Fatalf("500 after commit: got %d %s, want 202", first.status, first.body)
	}
	id := first.json(t)["id"].(string)

	d := recv.next(t, 30*time.Second)
	if d.event["type"] != "charge.succeeded" || d.event["object"] != "event" {
		t.Fatalf("delivery: got %s, want a charge.succeeded event", d.body)
	}
	obj, _ := d.event["data"].(map[string]any)["object"].(map[string]any)
	if obj["id"] != id || obj["status"] != "succeeded" {
		t.Fatalf("data.object: got %v, want charge %s succeeded", obj, id)
	}
	if d.eventID != d.event["id"] {
		t.Fatalf("Paygate-Event-Id %q, want the event's id %v", d.eventID, d.event["id"])
	}
	// The settlement is the reconciliation's entry in the charge's trail.
	var settled time.Time
	for _, e := range g.do(http.MethodGet, "/v1/charges/"+id, k, nil, "").json(t)["events"].([]any) {
		if ev := e.(map[string]any); ev["status_after"] == "succeeded" {
			settled, _ = time.Parse(time.RFC3339Nano, ev["at"].(string))
		}
	}
	if settled.IsZero() {
		t.Fatal("the charge's trail has no settlement")
	}
	if lag := d.at.Sub(settled); lag > 2*time.Second {
		t.Fatalf("delivered %s after the settlement, want within 2 s", lag)
	}

	if err := verify.Signature(d.body, d.signature, secret, verify.DefaultTolerance, time.Now()); err != nil {
		t.Fatalf("the endpoint's secret: %v", err)
	}
	if err := verify.Signature(d.body, d.signature, "whsec_not_the_secret", verify.DefaultTolerance, time.Now()); !errors.Is(err, verify.ErrMismatch) {
		t.Fatalf("a wrong secret: got %v, want %v", err, verify.ErrMismatch)
	}

	// The event, with its delivery; the pending event before it, which no endpoint wanted.
	evID := d.eventID
	eventually(t, 10*time.Second, func() error {
		ev := g.do(http.MethodGet, "/v1/events/"+evID, k, nil, "").json(t)
		dl, _ := ev["deliveries"].([]any)
		if len(dl) != 1 || dl[0].(map[string]any)["delivered"] != true {
			return fmt.Errorf("GET /v1/events/%s: deliveries %v, want one delivered", evID, ev["deliveries"])
		}
		return nil
	})
	list := g.do(http.MethodGet, "/v1/events?charge="+id, k, nil, "").json(t)["data"].([]any)
	var types []any
	for _, e := range list {
		types = append(types, e.(map[string]any)["type"])
	}
	if fmt.Sprint(types) != "[charge.succeeded charge.pending]" {
		t.Fatalf("the charge's events, newest first: got %v, want [charge.succeeded charge.pending]", types)
	}
	if n := len(recv.deliveries()); n != 1 {
		t.Fatalf("deliveries: got %d, want 1", n)
	}
}
