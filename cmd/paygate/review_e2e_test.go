package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestOperatorReviewAndManualResolution(t *testing.T) {
	t.Parallel()
	// Checks run only when asked (the first scheduled one is an hour away). The processor's
	// effect comes 2 s after the send: later than the attempt may execute, as the gateway is
	// told here, so that the operator may resolve before it lands.
	g := startGateway(t, "PAYGATE_RECONCILE_SCHEDULE", "1h,2h", "PAYGATE_IN_FLIGHT_MARGIN", "1ms")
	k := g.key("m_ops", "checkout")
	op := g.key("m_ops", "operator")
	aud := g.key("m_ops", "auditor")

	// The processor is slow: the caller's deadline passes after the request was sent, and
	// the charge takes effect 2 s later.
	g.script(`[{"delay_ms":2000}]`)
	r := g.charge(k, "ops1", visa, "Request-Timeout-Ms", "700")
	if r.status != 202 {
		t.Fatalf("timeout after send: got %d %s, want 202 pending", r.status, r.body)
	}
	id := r.json(t)["id"].(string)
	path := "/v1/charges/" + id

	// Roles: checkout keys cannot review, reconcile or resolve; auditors only read (the review
	// queue included).
	for _, tc := range []struct {
		method, path, key string
		want              int
	}{
		{http.MethodGet, "/v1/review", k, 403},
		{http.MethodGet, "/v1/review", aud, 200},
		{http.MethodPost, path + "/reconcile", k, 403},
		{http.MethodPost, path + "/resolve", k, 403},
		{http.MethodPost, path + "/resolve", aud, 403},
		{http.MethodGet, "/v1/jobs/dead", aud, 403},
		{http.MethodGet, path, aud, 200},
	} {
		if got := g.do(tc.method, tc.path, tc.key, nil, `{"outcome":"failed","note":"x"}`); got.status != tc.want {
			t.Fatalf("%s %s: got %d %s, want %d", tc.method, tc.path, got.status, got.body, tc.want)
		}
	}

	// Resolving by hand needs a recent reconciliation that found nothing conclusive.
	resolve := `{"outcome":"failed","note":"customer confirmed the order was abandoned"}`
	if got := g.do(http.MethodPost, path+"/resolve", op, nil, resolve); got.status != 409 ||
		got.json(t)["error"].(map[string]any)["code"] != "reconcile_first" {
		t.Fatalf("resolve before any check: got %d %s, want 409 reconcile_first", got.status, got.body)
	}
	check := g.do(http.MethodPost, path+"/reconcile", op, nil, "")
	if check.status != 200 || check.json(t)["charge"].(map[string]any)["status"] != "pending" {
		t.Fatalf("reconcile now: got %d %s, want the charge still pending", check.status, check.body)
	}
	if got := g.do(http.MethodPost, path+"/resolve", op, nil, `{"outcome":"failed"}`); got.status != 400 {
		t.Fatalf("resolve without a note: got %d, want 400", got.status)
	}
	done := g.do(http.MethodPost, path+"/resolve", op, nil, resolve)
	if done.status != 200 || done.json(t)["status"] != "failed" {
		t.Fatalf("manual resolution: got %d %s, want failed", done.status, done.body)
	}

	// The processor's evidence arrives later and contradicts the operator: the charge
	// reopens at the top of the review queue.
	g.effectLands(id)
	again := g.do(http.MethodPost, path+"/reconcile", op, nil, "")
	if again.status != 200 {
		t.Fatalf("reconcile after the effect: got %d %s", again.status, again.body)
	}
	queue := g.do(http.MethodGet, "/v1/review", op, nil, "").json(t)["data"].([]any)
	if len(queue) == 0 {
		t.Fatal("review queue: empty, want the reopened charge")
	}
	top := queue[0].(map[string]any)
	if top["charge"].(map[string]any)["id"] != id || top["review"].(map[string]any)["rank"].(float64) != 1 ||
		top["review"].(map[string]any)["reason"] != "contradicts_manual_resolution" {
		t.Fatalf("top of the review queue: got %v, want %s reopened with rank 1", top, id)
	}

	// The audit trail: every change, who, why, before and after.
	trail := g.do(http.MethodGet, path, op, nil, "").json(t)
	events := trail["events"].([]any)
	var manual map[string]any
	for _, e := range events {
		if e.(map[string]any)["action"] == "manual_resolution" {
			manual = e.(map[string]any)
		}
	}
	if manual == nil || manual["status_before"] != "pending" || manual["status_after"] != "failed" ||
		manual["note"] != "customer confirmed the order was abandoned" || manual["actor"] == "" {
		t.Fatalf("audit trail: got %v, want the manual resolution with who, before, after and note", events)
	}
	if last := events[len(events)-1].(map[string]any); last["action"] != "reopened" {
		t.Fatalf("last event: got %v, want reopened", last)
	}
	// The checkout key sees the same state changes, without the operator's note and key id,
	// nor the evidence.
	seen := g.do(http.MethodGet, path, k, nil, "")
	for _, private := range []string{"customer confirmed", manual["actor"].(string), `"evidence"`, `"reconciliation"`} {
		if strings.Contains(string(seen.body), private) {
			t.Fatalf("the checkout's view holds %q: %s", private, seen.body)
		}
	}
	if got := seen.json(t)["events"].([]any); len(got) != len(events) {
		t.Fatalf("the checkout's view: %d events, want the %d state changes", len(got), len(events))
	}

	// The trail is append-only in the database itself.
	conn, err := pgx.Connect(context.Background(), g.env["DATABASE_URL"])
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), `UPDATE charge_events SET note = 'rewritten'`); err == nil {
		t.Fatal("UPDATE of the audit trail succeeded")
	}
	if _, err := conn.Exec(context.Background(), `DELETE FROM charge_events`); err == nil {
		t.Fatal("DELETE from the audit trail succeeded")
	}
}

// TestResolveRefusedWhileAttemptInFlight: the processor holds a charge's first attempt
// longer than the caller waits; the charge is pending, and a check right away finds nothing.
// Resolving it then would let the checkout charge the order again while the first attempt
// may still succeed: the resolution is refused with 409 attempt_in_flight, which says until
// when (the attempt's start, plus its timeout, plus the margin), and the charge stays
// pending.
func TestResolveRefusedWhileAttemptInFlight(t *testing.T) {
	t.Parallel()
	g := startGateway(t, "PAYGATE_RECONCILE_SCHEDULE", "1h,2h")
	k, op := g.key("m_inflight", "checkout"), g.key("m_inflight", "operator")
	g.script(`[{"delay_ms":25000}]`)
	r := g.charge(k, "inflight1", visa, "Request-Timeout-Ms", "700")
	if r.status != 202 {
		t.Fatalf("timeout after send: got %d %s, want 202 pending", r.status, r.body)
	}
	path := "/v1/charges/" + r.json(t)["id"].(string)
	if c := g.do(http.MethodPost, path+"/reconcile", op, nil, ""); c.status != 200 || c.json(t)["charge"].(map[string]any)["status"] != "pending" {
		t.Fatalf("reconcile now: got %d %s, want the charge still pending", c.status, c.body)
	}
	got := g.do(http.MethodPost, path+"/resolve", op, nil, `{"outcome":"failed","note":"nothing at the processor"}`)
	e, _ := got.json(t)["error"].(map[string]any)
	if got.status != 409 || e["code"] != "attempt_in_flight" || got.header.Get("Retry-After") == "" {
		t.Fatalf("resolve while the attempt may execute: got %d %v %s, want 409 attempt_in_flight with Retry-After",
			got.status, got.header, got.body)
	}
	until, err := time.Parse(time.RFC3339Nano, e["in_flight_until"].(string))
	if err != nil {
		t.Fatalf("in_flight_until: %v", err)
	}
	// The last attempt to end, plus the default margin of 30 s.
	var end time.Time
	for _, a := range g.do(http.MethodGet, path, op, nil, "").json(t)["attempts_detail"].([]any) {
		at := a.(map[string]any)
		started, err := time.Parse(time.RFC3339Nano, at["started_at"].(string))
		if err != nil {
			t.Fatal(err)
		}
		if e := started.Add(time.Duration(at["timeout_ms"].(float64)) * time.Millisecond); e.After(end) {
			end = e
		}
	}
	if want := end.Add(30 * time.Second); !until.Equal(want) {
		t.Fatalf("in_flight_until %v, want the last attempt's end plus 30 s, %v", until, want)
	}
	if c := g.do(http.MethodGet, path, k, nil, "").json(t); c["status"] != "pending" {
		t.Fatalf("after the refused resolution: got %v, want the charge still pending", c["status"])
	}
}
