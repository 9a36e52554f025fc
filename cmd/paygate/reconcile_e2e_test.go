package main

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestPendingChargesAreReconciled: an unknown outcome is answered 202 pending and resolved
// later by reading what the processor has — never by a second charge; a poller repeating
// the same request sees it settle.
func TestPendingChargesAreReconciled(t *testing.T) {
	t.Parallel()
	g := startGateway(t, "PAYGATE_RECONCILE_SCHEDULE", "1s,2s,3s,1h", "PAYGATE_RECONCILE_SWEEP", "1s")
	k := g.key("m_recon", "checkout")

	// The processor charged the card, then answered 500: the outcome is unknown.
	g.script(`[{"status":500,"after_commit":true}]`)
	first := g.charge(k, "rc1", visa)
	if first.status != 202 || first.json(t)["status"] != "pending" {
		t.Fatalf("500 after commit: got %d %s, want 202 pending", first.status, first.body)
	}
	id := first.json(t)["id"].(string)

	// The request first answered 202 is answered with the charge's current state.
	eventually(t, 25*time.Second, func() error {
		r := g.charge(k, "rc1", visa)
		switch {
		case r.status == 202:
			return fmt.Errorf("waiting for reconciliation: got %d %s", r.status, r.body)
		case r.status != 200 || r.json(t)["status"] != "succeeded" || r.json(t)["processor_ref"] == nil:
			t.Fatalf("settled: got %d %s", r.status, r.body)
		}
		return nil
	})
	if n := g.ledger()["pg_"+id]; n != 1 {
		t.Fatalf("effects under pg_%s: got %d, want 1 (reconciliation never charges again)", id, n)
	}

	// A request the processor never executed stays pending: absence proves nothing until
	// the key's retention has closed.
	g.script(`[{"blackhole":true},{"blackhole":true},{"blackhole":true},{"blackhole":true}]`)
	hole := g.charge(k, "rc2", visa, "Request-Timeout-Ms", "1200")
	if hole.status != 202 {
		t.Fatalf("blackhole: got %d %s, want 202", hole.status, hole.body)
	}
	// The short schedule (+1 s, +2 s, +3 s) has run, its checks finding nothing: the next
	// check is the one of +1 h.
	aud := g.key("m_recon", "auditor")
	holePath := "/v1/charges/" + hole.json(t)["id"].(string)
	eventually(t, 30*time.Second, func() error {
		c := g.do(http.MethodGet, holePath, aud, nil, "").json(t)
		rec, _ := c["reconciliation"].(map[string]any)
		next, _ := time.Parse(time.RFC3339Nano, fmt.Sprint(rec["next_check_at"]))
		if checks, _ := rec["checks"].([]any); len(checks) == 0 || time.Until(next) < 30*time.Minute {
			return fmt.Errorf("checks of the blackholed charge: got %v, want the short schedule's done", rec)
		}
		return nil
	})
	got := g.do(http.MethodGet, holePath, k, nil, "")
	if got.json(t)["status"] != "pending" {
		t.Fatalf("a charge the processor never saw: got %s, want still pending", got.body)
	}

	// Reconciliation is observable: pending count and age, review queue, checks by path.
	m := g.metrics()
	for _, want := range []string{"paygate_pending_charges 1", "paygate_pending_oldest_seconds", "paygate_review_queue_size 0",
		`paygate_reconciliation_checks_total{kind="resolve",path="list"} 1`, "paygate_jobs_dead"} {
		if !strings.Contains(m, want) {
			t.Fatalf("metrics lack %q", want)
		}
	}
}

// TestReconciliationReplay: with replay on, a key the processor saw but never answered is
// sent again, under the same key and with the same body, inside the 24 h rule; the charge
// resolves by the replay path with one effect.
func TestReconciliationReplay(t *testing.T) {
	t.Parallel()
	g := startGateway(t, "PAYGATE_RECONCILE_SCHEDULE", "1s,2s,1h", "PAYGATE_RECONCILE_SWEEP", "1s",
		"PAYGATE_RECONCILE_REPLAY", "on")
	k, aud := g.key("m_replay", "checkout"), g.key("m_replay", "auditor")
	g.script(`[{"blackhole":true}]`) // the one attempt the caller's deadline leaves room for
	r := g.charge(k, "rp1", visa, "Request-Timeout-Ms", "1200")
	if r.status != 202 {
		t.Fatalf("blackhole: got %d %s, want 202", r.status, r.body)
	}
	id := r.json(t)["id"].(string)
	eventually(t, 25*time.Second, func() error {
		c := g.do(http.MethodGet, "/v1/charges/"+id, aud, nil, "").json(t) // the checks are for auditors and operators
		if c["status"] != "succeeded" {
			return fmt.Errorf("the blackholed charge never resolved: %v", c)
		}
		checks := c["reconciliation"].(map[string]any)["checks"].([]any)
		if last := checks[len(checks)-1].(map[string]any)["decision"].(map[string]any); last["path"] != "replay" {
			t.Fatalf("resolution path: got %v, want replay", last)
		}
		return nil
	})
	if n := g.ledger()["pg_"+id]; n != 1 {
		t.Fatalf("effects: got %d, want 1", n)
	}
}
