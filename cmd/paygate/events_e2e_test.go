package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/event/verify"
)

// receiver is a merchant's webhook endpoint: an HTTP server that records every delivery and
// answers what answer says (200 when nil).
type receiver struct {
	*httptest.Server
	mu     sync.Mutex
	got    []delivery
	answer func(n int, d delivery) int // n: the delivery's number, from 1
	// arrived receives every delivery as it arrives; held, of a holdingReceiver, the one it
	// holds.
	arrived chan delivery
	held    chan delivery
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

// TestEventRetriedUntilDelivered: a receiver that fails 3 times, then answers 200, gets the
// event exactly once more after its failures; the waits between the tries are the
// retry package's full jitter, below ceilings that double.
func TestEventRetriedUntilDelivered(t *testing.T) {
	t.Parallel()
	const base = 300 * time.Millisecond
	g := startGateway(t, "PAYGATE_WEBHOOK_ALLOW_HTTP", "1", "PAYGATE_EVENT_RETRY_BASE", base.String(),
		"PAYGATE_EVENT_RETRY_CAP", "10s")
	k, op := g.key("m_retry", "checkout"), g.key("m_retry", "operator")
	recv := newReceiver(t, func(n int, _ delivery) int {
		if n <= 3 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	g.endpoint(op, recv.URL, "*")

	if r := g.charge(k, "rt1", visa); r.status != http.StatusOK {
		t.Fatalf("charge: got %d %s", r.status, r.body)
	}
	var tries []delivery
	for range 4 {
		tries = append(tries, recv.next(t, 30*time.Second))
	}
	evID := tries[0].eventID
	for i, d := range tries {
		if d.eventID != evID || d.event["type"] != "charge.succeeded" {
			t.Fatalf("try %d: got %s %s, want %s again", i+1, d.eventID, d.event["type"], evID)
		}
	}
	// The delivery's record: 3 failures, each with the wait it drew, then the delivery.
	var dl []any
	eventually(t, 10*time.Second, func() error {
		dl, _ = g.do(http.MethodGet, "/v1/events/"+evID, k, nil, "").json(t)["deliveries"].([]any)
		if len(dl) != 4 || dl[3].(map[string]any)["delivered"] != true {
			return fmt.Errorf("deliveries: got %v, want 3 failures and a delivery", dl)
		}
		return nil
	})
	for i := range 3 {
		d := dl[i].(map[string]any)
		if d["delivered"] != false || d["http_status"] != float64(500) || d["error"] != "answered 500" {
			t.Fatalf("try %d: got %v, want a failure answered 500", i+1, d)
		}
		at, _ := time.Parse(time.RFC3339Nano, d["at"].(string))
		next, _ := time.Parse(time.RFC3339Nano, d["next_retry_at"].(string))
		wait, ceiling := next.Sub(at), base<<i
		if wait < 0 || wait >= ceiling {
			t.Fatalf("try %d: waited %s, want full jitter in [0, %s)", i+1, wait, ceiling)
		}
		if gap := tries[i+1].at.Sub(tries[i].at); gap < wait-50*time.Millisecond {
			t.Fatalf("try %d came %s after try %d, before its wait of %s", i+2, gap, i+1, wait)
		}
	}
	// Exactly once more after the failures: the job is done and nothing else came.
	conn := dbConn(t, g)
	eventually(t, 10*time.Second, func() error {
		var state string
		if err := conn.QueryRow(t.Context(), `SELECT state FROM river_job WHERE kind = 'event_delivery'`).Scan(&state); err != nil {
			return err
		}
		if state != "completed" {
			return fmt.Errorf("delivery job %s, want completed", state)
		}
		return nil
	})
	if n := len(recv.deliveries()); n != 4 {
		t.Fatalf("the receiver got %d deliveries, want 4", n)
	}
	m := g.metrics()
	for _, want := range []string{`paygate_event_deliveries_total{result="delivered"} 1`,
		`paygate_event_deliveries_total{result="failed"} 3`, "paygate_event_oldest_undelivered_seconds 0"} {
		if !strings.Contains(m, want) {
			t.Fatalf("metrics lack %q", want)
		}
	}
}

// dbConn is a connection to the gateway's database, closed when the test ends.
func dbConn(t *testing.T, g *gateway) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), g.env["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// TestEventDeadLetterReplayed: a delivery still failing when its window ends is a dead
// letter, shown and replayable like any other; its replay delivers it. An endpoint that
// failed every delivery for the disable window is disabled, and says why.
func TestEventDeadLetterReplayed(t *testing.T) {
	t.Parallel()
	g := startGateway(t, "PAYGATE_WEBHOOK_ALLOW_HTTP", "1", "PAYGATE_EVENT_RETRY_BASE", "100ms",
		"PAYGATE_EVENT_RETRY_CAP", "200ms", "PAYGATE_EVENT_RETRY_WINDOW", "1500ms")
	k, op := g.key("m_dead_ev", "checkout"), g.key("m_dead_ev", "operator")
	var failing sync.Mutex
	down := true
	recv := newReceiver(t, func(int, delivery) int {
		failing.Lock()
		defer failing.Unlock()
		if down {
			return http.StatusServiceUnavailable
		}
		return http.StatusNoContent
	})
	epID, _ := g.endpoint(op, recv.URL, "charge.succeeded")
	if r := g.charge(k, "dl1", visa); r.status != http.StatusOK {
		t.Fatalf("charge: got %d %s", r.status, r.body)
	}
	var job map[string]any
	eventually(t, 30*time.Second, func() error {
		data, _ := g.do(http.MethodGet, "/v1/jobs/dead", op, nil, "").json(t)["data"].([]any)
		if len(data) != 1 || data[0].(map[string]any)["kind"] != "event_delivery" {
			return fmt.Errorf("dead letters: got %v, want the delivery", data)
		}
		job = data[0].(map[string]any)
		return nil
	})
	tried := len(recv.deliveries())
	if tried < 2 {
		t.Fatalf("the receiver got %d tries before the window ended, want several", tried)
	}
	ep := g.do(http.MethodGet, "/v1/webhook_endpoints/"+epID, op, nil, "").json(t)
	if ep["status"] != "failing" || ep["failing_since"] == nil {
		t.Fatalf("endpoint: got %v, want failing", ep)
	}

	failing.Lock()
	down = false
	failing.Unlock()
	r := g.do(http.MethodPost, fmt.Sprintf("/v1/jobs/%d/replay", int64(job["id"].(float64))), op, nil, "")
	if r.status != http.StatusOK {
		t.Fatalf("replay: got %d %s", r.status, r.body)
	}
	for {
		if d := recv.next(t, 30*time.Second); d.event["type"] == "charge.succeeded" && len(recv.deliveries()) > tried {
			break
		}
	}
	eventually(t, 10*time.Second, func() error {
		ep = g.do(http.MethodGet, "/v1/webhook_endpoints/"+epID, op, nil, "").json(t)
		if ep["status"] != "enabled" {
			return fmt.Errorf("endpoint after a delivery: got %v, want enabled", ep)
		}
		return nil
	})
}

// TestEndpointDisabled: an endpoint that failed every delivery for the disable window is
// disabled, with the reason an operator sees, and nothing more is sent to it.
func TestEndpointDisabled(t *testing.T) {
	t.Parallel()
	g := startGateway(t, "PAYGATE_WEBHOOK_ALLOW_HTTP", "1", "PAYGATE_EVENT_RETRY_BASE", "100ms",
		"PAYGATE_EVENT_RETRY_CAP", "200ms", "PAYGATE_EVENT_DISABLE_AFTER", "1s")
	k, op := g.key("m_disabled", "checkout"), g.key("m_disabled", "operator")
	recv := newReceiver(t, func(int, delivery) int { return http.StatusFound })
	epID, _ := g.endpoint(op, recv.URL, "charge.succeeded")
	if r := g.charge(k, "ds1", visa); r.status != http.StatusOK {
		t.Fatalf("charge: got %d %s", r.status, r.body)
	}
	var ep map[string]any
	eventually(t, 30*time.Second, func() error {
		ep = g.do(http.MethodGet, "/v1/webhook_endpoints/"+epID, op, nil, "").json(t)
		if ep["status"] != "disabled" {
			return fmt.Errorf("endpoint: got %v, want disabled", ep)
		}
		return nil
	})
	if reason, _ := ep["disabled_reason"].(string); !strings.Contains(reason, "every delivery failed since") ||
		!strings.Contains(reason, "redirects are not followed") {
		t.Fatalf("disabled_reason: got %q", reason)
	}
	list := g.do(http.MethodGet, "/v1/webhook_endpoints", op, nil, "").json(t)["data"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["status"] != "disabled" {
		t.Fatalf("endpoints: got %v", list)
	}
}

// holdingReceiver is an endpoint whose first delivery is held until release is closed: the
// test acts while the gateway waits for the answer. Every later one is answered 200 at once.
func holdingReceiver(t *testing.T) (*receiver, chan struct{}) {
	t.Helper()
	release := make(chan struct{})
	r := newReceiver(t, nil)
	held := make(chan delivery, 1)
	r.answer = func(n int, d delivery) int {
		if n == 1 {
			held <- d
			<-release
		}
		return http.StatusOK
	}
	r.held = held
	return r, release
}

// TestEventDeliveredAfterKill: a gateway killed with kill -9 while it waits for a
// delivery's answer delivers the event after its restart: the delivery's job is rescued and
// tried again (at least once: the receiver sees the event id twice).
func TestEventDeliveredAfterKill(t *testing.T) {
	t.Parallel()
	r := newKillRig(t)
	r.env = append(r.env, "PAYGATE_WEBHOOK_ALLOW_HTTP=1", "PAYGATE_JOB_TIMEOUT=2s", "PAYGATE_JOB_RESCUE_AFTER=3s")
	r.startGateway()
	k, op := r.g.key("m_kill_ev", "checkout"), r.g.key("m_kill_ev", "operator")
	recv, release := holdingReceiver(t)
	defer close(release)
	r.g.endpoint(op, recv.URL, "charge.succeeded")
	if c := r.g.charge(k, "kill-ev", visa); c.status != http.StatusOK {
		t.Fatalf("charge: got %d %s", c.status, c.body)
	}
	var first delivery
	select {
	case first = <-recv.held:
	case <-time.After(30 * time.Second):
		t.Fatal("the delivery never reached the receiver")
	}
	r.gw.kill9(t)
	r.startGateway()
	var again delivery
	for again.eventID == "" {
		if d := recv.next(t, 30*time.Second); d.eventID == first.eventID && d.at.After(first.at) {
			again = d
		}
	}
	eventually(t, 10*time.Second, func() error {
		dl, _ := r.g.do(http.MethodGet, "/v1/events/"+first.eventID, k, nil, "").json(t)["deliveries"].([]any)
		if len(dl) != 1 || dl[0].(map[string]any)["delivered"] != true {
			return fmt.Errorf("deliveries: got %v, want the delivery after the restart", dl)
		}
		return nil
	})
}

// TestEventsAcrossDatabaseRestart: no event is lost when PostgreSQL restarts: not the one
// whose delivery was waiting for its answer when the database stopped (its record could not
// be written: the delivery's job is tried again), nor the ones written after.
func TestEventsAcrossDatabaseRestart(t *testing.T) {
	t.Parallel()
	pg := startCluster(t)
	g := startGateway(t, "DATABASE_URL", pg.url, "PAYGATE_WEBHOOK_ALLOW_HTTP", "1", "PAYGATE_JOB_TIMEOUT", "2s",
		"PAYGATE_JOB_RESCUE_AFTER", "3s", "PAYGATE_RECONCILE_SCHEDULE", "1h")
	k, op := g.key("m_pg_ev", "checkout"), g.key("m_pg_ev", "operator")
	recv, release := holdingReceiver(t)
	g.endpoint(op, recv.URL, "charge.succeeded")
	before := g.charge(k, "pg-ev-1", visa)
	if before.status != http.StatusOK {
		t.Fatalf("charge: got %d %s", before.status, before.body)
	}
	var first delivery
	select {
	case first = <-recv.held:
	case <-time.After(30 * time.Second):
		t.Fatal("the delivery never reached the receiver")
	}
	pg.stop()
	close(release) // answered 200 while the database is down: the try cannot be recorded
	pg.startNormally()
	eventually(t, 20*time.Second, func() error {
		if r := g.do(http.MethodGet, "/readyz", "", nil, ""); r.status != 200 {
			return fmt.Errorf("not ready after the database came back: %d %s", r.status, r.body)
		}
		return nil
	})
	after := g.charge(k, "pg-ev-2", visa)
	if after.status != http.StatusOK {
		t.Fatalf("charge after the restart: got %d %s", after.status, after.body)
	}
	for _, id := range []string{before.json(t)["id"].(string), after.json(t)["id"].(string)} {
		eventually(t, 30*time.Second, func() error {
			list, _ := g.do(http.MethodGet, "/v1/events?type=charge.succeeded&charge="+id, k, nil, "").json(t)["data"].([]any)
			if len(list) != 1 {
				return fmt.Errorf("events of %s: got %v", id, list)
			}
			evID := list[0].(map[string]any)["id"].(string)
			dl, _ := g.do(http.MethodGet, "/v1/events/"+evID, k, nil, "").json(t)["deliveries"].([]any)
			for _, d := range dl {
				if d.(map[string]any)["delivered"] == true {
					return nil
				}
			}
			return fmt.Errorf("event %s: deliveries %v, want one delivered", evID, dl)
		})
	}
	seen := map[string]bool{}
	for _, d := range recv.deliveries() {
		seen[d.eventID] = true
	}
	if len(seen) != 2 || !seen[first.eventID] {
		t.Fatalf("the receiver saw events %v, want both charges'", seen)
	}
}

// TestWebhookEndpointsAPI: endpoints are validated, listed with their state, rotated (the
// old secret signs beside the new one) and deleted; events are listed newest first, a page
// at a time; every refusal names its parameter.
func TestWebhookEndpointsAPI(t *testing.T) {
	t.Parallel()
	g := startGateway(t, "PAYGATE_WEBHOOK_ALLOW_HTTP", "1")
	k, op, aud := g.key("m_ep", "checkout"), g.key("m_ep", "operator"), g.key("m_ep", "auditor")
	other := g.key("m_ep_other", "operator")
	post := func(key, body string) reply {
		return g.do(http.MethodPost, "/v1/webhook_endpoints", key, nil, body)
	}
	refused := []struct {
		body, code, param string
		status            int
	}{
		{`{"events":["charge.succeeded"]}`, "parameter_missing", "url", 400},
		{`{"url":"https://hooks.example.com/x"}`, "parameter_missing", "events", 400},
		{`{"url":"https://hooks.example.com/x","events":[]}`, "parameter_missing", "events", 400},
		{`{"url":"https://hooks.example.com/x","events":["charge.refunded"]}`, "parameter_invalid", "events[0]", 400},
		{`{"url":"https://hooks.example.com/x","events":["charge.failed","charge.failed"]}`, "duplicate_parameter", "events[1]", 400},
		{`{"url":"http://93.184.216.34/x","events":["*"]}`, "url_insecure", "url", 400},
		{`{"url":"https://10.0.0.1/x","events":["*"]}`, "url_forbidden", "url", 400},
		{`{"url":"https://169.254.169.254/latest","events":["*"]}`, "url_forbidden", "url", 400},
		{`{"url":"https://[::1]/x","events":["*"]}`, "url_forbidden", "url", 400},
		{`{"url":"ftp://hooks.example.com/","events":["*"]}`, "url_invalid", "url", 400},
		{`{"url":"https://hooks.example.com/x","events":["*"],"secret":"mine"}`, "parameter_unknown", "secret", 400},
	}
	for _, r := range refused {
		got := post(op, r.body)
		e, _ := got.json(t)["error"].(map[string]any)
		if got.status != r.status || e["code"] != r.code || e["param"] != r.param {
			t.Errorf("POST %s: got %d %s, want %d %s param %s", r.body, got.status, got.body, r.status, r.code, r.param)
		}
	}
	if got := post(aud, `{"url":"https://127.0.0.1/","events":["*"]}`); got.status != http.StatusForbidden {
		t.Fatalf("an auditor registering an endpoint: got %d, want 403", got.status)
	}
	if got := g.do(http.MethodGet, "/v1/webhook_endpoints", k, nil, ""); got.status != http.StatusForbidden {
		t.Fatalf("a checkout listing endpoints: got %d, want 403", got.status)
	}

	recv := newReceiver(t, nil)
	id, secret := g.endpoint(op, recv.URL, "*")
	ep := g.do(http.MethodGet, "/v1/webhook_endpoints/"+id, aud, nil, "").json(t)
	if ep["status"] != "enabled" || ep["secret"] != nil || len(ep["events"].([]any)) != 7 {
		t.Fatalf("GET the endpoint: got %v, want enabled, every type, no secret", ep)
	}
	if got := g.do(http.MethodGet, "/v1/webhook_endpoints/"+id, other, nil, ""); got.status != http.StatusNotFound {
		t.Fatalf("another merchant's endpoint: got %d, want 404", got.status)
	}
	rot := g.do(http.MethodPost, "/v1/webhook_endpoints/"+id+"/rotate", op, nil, "").json(t)
	newSecret, _ := rot["secret"].(string)
	if !strings.HasPrefix(newSecret, "whsec_") || newSecret == secret || rot["previous_secret_expires_at"] == nil {
		t.Fatalf("rotate: got %v, want a new secret and when the old one stops", rot)
	}
	if strings.Contains(g.logs.String(), secret[6:]) || strings.Contains(g.logs.String(), newSecret[6:]) {
		t.Fatal("a signing secret reached the log")
	}

	// A delivery during the rotation verifies under both secrets.
	if r := g.charge(k, "ep1", visa); r.status != http.StatusOK {
		t.Fatalf("charge: got %d %s", r.status, r.body)
	}
	d := recv.next(t, 30*time.Second)
	for _, s := range []string{secret, newSecret} {
		if err := verify.Signature(d.body, d.signature, s, verify.DefaultTolerance, time.Now()); err != nil {
			t.Fatalf("during the rotation, secret %s: %v (header %s)", s[:10], err, d.signature)
		}
	}

	// Events: newest first, filtered by type, a page at a time.
	for i := range 3 {
		if r := g.charge(k, fmt.Sprint("ep-d", i), `{"amount":1000,"currency":"usd","payment_method":"pm_card_visa_chargeDeclinedInsufficientFunds","initiator":"customer"}`); r.status != http.StatusPaymentRequired {
			t.Fatalf("decline: got %d %s", r.status, r.body)
		}
	}
	page := g.do(http.MethodGet, "/v1/events?limit=2&type=charge.declined", aud, nil, "").json(t)
	data := page["data"].([]any)
	if len(data) != 2 || page["has_more"] != true {
		t.Fatalf("first page: got %v", page)
	}
	last := data[1].(map[string]any)["id"].(string)
	rest := g.do(http.MethodGet, "/v1/events?limit=2&type=charge.declined&starting_after="+last, k, nil, "").json(t)
	if d := rest["data"].([]any); len(d) != 1 || rest["has_more"] != false || d[0].(map[string]any)["id"] == last {
		t.Fatalf("second page: got %v", rest)
	}
	for q, param := range map[string]string{"type=charge.refunded": "type", "limit=0": "limit", "starting_after=x": "starting_after",
		"colour=red": "colour", "charge=x": "charge"} {
		got := g.do(http.MethodGet, "/v1/events?"+q, k, nil, "")
		if e, _ := got.json(t)["error"].(map[string]any); got.status != 400 || e["param"] != param {
			t.Errorf("GET /v1/events?%s: got %d %s, want 400 naming %s", q, got.status, got.body, param)
		}
	}
	if got := g.do(http.MethodGet, "/v1/events?starting_after=evt_nosuchcharge_o", k, nil, ""); got.status != http.StatusNotFound {
		t.Fatalf("a cursor naming no event: got %d %s, want 404", got.status, got.body)
	}
	if got := g.do(http.MethodGet, "/v1/events/"+d.eventID, other, nil, ""); got.status != http.StatusNotFound {
		t.Fatalf("another merchant's event: got %d, want 404", got.status)
	}

	if got := g.do(http.MethodDelete, "/v1/webhook_endpoints/"+id, op, nil, ""); got.status != http.StatusOK || got.json(t)["deleted"] != true {
		t.Fatalf("delete: got %d %s", got.status, got.body)
	}
	if got := g.do(http.MethodGet, "/v1/webhook_endpoints/"+id, op, nil, ""); got.status != http.StatusNotFound {
		t.Fatalf("a deleted endpoint: got %d, want 404", got.status)
	}
	if list := g.do(http.MethodGet, "/v1/webhook_endpoints", op, nil, "").json(t)["data"].([]any); len(list) != 0 {
		t.Fatalf("endpoints after the delete: got %v", list)
	}
}

// TestChargeWritesNoEventRow: a charge's events cost its ordinary path nothing: its first
// outcome's event is read from its row, and for a merchant without endpoints nothing else
// is written for it (no audit entry, no job, no delivery).
func TestChargeWritesNoEventRow(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	k := g.key("m_cost", "checkout")
	r := g.charge(k, "cost1", visa)
	if r.status != http.StatusOK {
		t.Fatalf("charge: got %d %s", r.status, r.body)
	}
	id := r.json(t)["id"].(string)
	list := g.do(http.MethodGet, "/v1/events?charge="+id, k, nil, "").json(t)["data"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["type"] != "charge.succeeded" {
		t.Fatalf("the charge's events: got %v, want charge.succeeded", list)
	}
	conn := dbConn(t, g)
	var trail, jobs, deliveries int
	if err := conn.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM charge_events WHERE charge_id = $1),
		(SELECT count(*) FROM river_job WHERE kind = 'event_delivery'), (SELECT count(*) FROM event_deliveries)`, id).
		Scan(&trail, &jobs, &deliveries); err != nil {
		t.Fatal(err)
	}
	if trail+jobs+deliveries != 0 {
		t.Fatalf("written for the charge's events: %d audit entries, %d jobs, %d deliveries, want none", trail, jobs, deliveries)
	}
}
