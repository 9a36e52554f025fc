package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// faults sets the simulator's random faults.
func (g *gateway) faults(body string) {
	g.t.Helper()
	resp, err := http.Post(g.simBase+"/_sim/faults", "application/json", strings.NewReader(body))
	if err != nil {
		g.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		g.t.Fatalf("sim faults: status %d", resp.StatusCode)
	}
}

// pendingResolvedFailed makes a charge whose outcome is unknown (the processor takes effect 2 s
// after the caller's deadline), resolves it failed by hand after an inconclusive check, and
// returns its path once the processor has charged it. The gateway must take an attempt to
// execute for no longer than its timeout (PAYGATE_IN_FLIGHT_MARGIN), or the resolution waits
// for the effect.
func (g *gateway) pendingResolvedFailed(checkout, op string) string {
	g.t.Helper()
	g.script(`[{"delay_ms":2000}]`)
	r := g.charge(checkout, "reopen1", visa, "Request-Timeout-Ms", "700")
	if r.status != 202 {
		g.t.Fatalf("timeout after send: got %d %s, want 202 pending", r.status, r.body)
	}
	id := r.json(g.t)["id"].(string)
	path := "/v1/charges/" + id
	if c := g.do(http.MethodPost, path+"/reconcile", op, nil, ""); c.status != 200 {
		g.t.Fatalf("reconcile: got %d %s", c.status, c.body)
	}
	if d := g.do(http.MethodPost, path+"/resolve", op, nil, `{"outcome":"failed","note":"abandoned"}`); d.status != 200 {
		g.t.Fatalf("resolve: got %d %s", d.status, d.body)
	}
	g.effectLands(id)
	return path
}

// reviewTop returns the charge id, rank and reason first in the review queue ("" when empty).
func (g *gateway) reviewTop(op string) (id string, rank float64, reason string) {
	g.t.Helper()
	q := g.do(http.MethodGet, "/v1/review", op, nil, "").json(g.t)["data"].([]any)
	if len(q) == 0 {
		return "", 0, ""
	}
	top := q[0].(map[string]any)
	rv := top["review"].(map[string]any)
	return top["charge"].(map[string]any)["id"].(string), rv["rank"].(float64), rv["reason"].(string)
}

// TestReopenedChargeResolvesAgain: a charge reopened because the processor's evidence
// contradicts the operator's `failed` is an ordinary pending charge at the top of the review
// queue: a check with conclusive evidence resolves it, and one that could read nothing lets
// no operator resolve it (janitor's tests show an operator resolving it again after a check
// that reached the processor and settled nothing).
func TestReopenedChargeResolvesAgain(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		faults     string // during the check after the reopening
		wantStatus string // after that check
		resolve    int    // the status of a manual resolution then, 0 for none
	}{
		{"the processor's evidence resolves it", "", "succeeded", 0},
		// A check whose every read failed saw nothing: it does not open the way to a
		// manual resolution (the charge stays first in line for the next check).
		{"a check that reached nothing lets no operator resolve it", `{"error_rate":1,"include_reads":true}`, "pending", 409},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := startGateway(t, "PAYGATE_RECONCILE_SCHEDULE", "1h,2h", "PAYGATE_IN_FLIGHT_MARGIN", "1ms")
			k := g.key("m_ops", "checkout")
			op := g.key("m_ops", "operator")
			path := g.pendingResolvedFailed(k, op)
			id := strings.TrimPrefix(path, "/v1/charges/")

			if a := g.do(http.MethodPost, path+"/reconcile", op, nil, ""); a.status != 200 ||
				a.json(t)["charge"].(map[string]any)["status"] != "pending" {
				t.Fatalf("reconcile after the effect: got %d %s, want the charge reopened", a.status, a.body)
			}
			if top, rank, reason := g.reviewTop(op); top != id || rank != 1 || reason != "contradicts_manual_resolution" {
				t.Fatalf("review queue: got %s rank %v %s, want %s first, contradicting the manual resolution", top, rank, reason, id)
			}

			if tc.faults != "" {
				g.faults(tc.faults)
			}
			a := g.do(http.MethodPost, path+"/reconcile", op, nil, "")
			if a.status != 200 || a.json(t)["charge"].(map[string]any)["status"] != tc.wantStatus {
				t.Fatalf("reconcile the reopened charge: got %d %s, want %s", a.status, a.body, tc.wantStatus)
			}
			if tc.resolve == 0 {
				if top, _, _ := g.reviewTop(op); top != "" {
					t.Fatalf("review queue: got %s, want empty once the evidence resolved the charge", top)
				}
				return
			}
			if top, rank, _ := g.reviewTop(op); top != id || rank != 1 {
				t.Fatalf("review queue after an inconclusive check: got %s rank %v, want %s still first", top, rank, id)
			}
			got := g.do(http.MethodPost, path+"/resolve", op, nil, `{"outcome":"succeeded","note":"the processor shows it succeeded"}`)
			if got.status != tc.resolve {
				t.Fatalf("resolve the reopened charge: got %d %s, want %d", got.status, got.body, tc.resolve)
			}
			if top, rank, _ := g.reviewTop(op); top != id || rank != 1 {
				t.Fatalf("review queue after a refused resolution: got %s rank %v, want %s still first", top, rank, id)
			}
		})
	}
}

// TestCheckInFlightKeepsManualResolution: a check that read the charge before an operator
// resolved it `failed` and then finds the processor's success reopens the charge at the top
// of the review queue; it never replaces the operator's outcome silently.
func TestCheckInFlightKeepsManualResolution(t *testing.T) {
	t.Parallel()
	g := startGateway(t, "PAYGATE_RECONCILE_SCHEDULE", "1h,2h", "PAYGATE_IN_FLIGHT_MARGIN", "1ms")
	k := g.key("m_ops", "checkout")
	op := g.key("m_ops", "operator")
	g.script(`[{"delay_ms":2000}]`)
	r := g.charge(k, "inflight1", visa, "Request-Timeout-Ms", "700")
	if r.status != 202 {
		t.Fatalf("timeout after send: got %d %s, want 202 pending", r.status, r.body)
	}
	id := r.json(t)["id"].(string)
	path := "/v1/charges/" + id
	if c := g.do(http.MethodPost, path+"/reconcile", op, nil, ""); c.status != 200 {
		t.Fatalf("reconcile: got %d %s", c.status, c.body)
	}

	// Reads take 3 s: the next check reads the charge, pending, then waits on the processor
	// while the operator resolves it.
	g.faults(`{"latency_ms":3000}`)
	done := make(chan reply, 1)
	reads := g.logCount("Requesting GET", "/v1/payment_intents")
	go func() { done <- g.do(http.MethodPost, path+"/reconcile", op, nil, "") }()
	// The check has read the charge and waits on the processor's read.
	eventually(t, 10*time.Second, func() error {
		if n := g.logCount("Requesting GET", "/v1/payment_intents"); n == reads {
			return fmt.Errorf("the check has not asked the processor yet (%d reads)", n)
		}
		return nil
	})
	if d := g.do(http.MethodPost, path+"/resolve", op, nil, `{"outcome":"failed","note":"abandoned"}`); d.status != 200 {
		t.Fatalf("resolve: got %d %s", d.status, d.body)
	}
	if chk := <-done; chk.status != 200 {
		t.Fatalf("check in flight: got %d %s", chk.status, chk.body)
	}
	g.faults(`{}`)

	st := g.do(http.MethodGet, path, op, nil, "").json(t)
	if st["status"] != "pending" {
		t.Fatalf("charge: got %v, want pending (reopened), not the check's outcome over the operator's", st["status"])
	}
	if top, rank, reason := g.reviewTop(op); top != id || rank != 1 || reason != "contradicts_manual_resolution" {
		t.Fatalf("review queue: got %s rank %v %s, want %s first, contradicting the manual resolution", top, rank, reason, id)
	}
	events := st["events"].([]any)
	if last := events[len(events)-1].(map[string]any); last["action"] != "reopened" || last["status_before"] != "failed" {
		t.Fatalf("last event: got %v, want reopened from failed", last)
	}
}
