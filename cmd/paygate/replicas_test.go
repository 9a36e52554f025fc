package main

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestReplicasReconcileOnce: three gateway processes on one database and one external
// simulator reconcile a batch of unknown outcomes; one replica is killed in the middle of
// the sweep. Every charge is resolved, and resolved once.
func TestReplicasReconcileOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	t.Parallel()
	r := newKillRig(t)
	r.env = append(r.env, "PAYGATE_RECONCILE_SCHEDULE=1s,2s,3s,1h", "PAYGATE_RECONCILE_SWEEP=1s")
	var replicas []*process
	var bases []string
	for range 3 {
		r.startGateway()
		replicas = append(replicas, r.gw)
		bases = append(bases, r.g.base)
	}
	k := r.g.key("m_replicas", "checkout")
	const n = 30
	steps := ""
	for i := range n {
		if i > 0 {
			steps += ","
		}
		steps += `{"status":500,"after_commit":true}`
	}
	r.g.script("[" + steps + "]")
	for i := range n {
		r.g.base = bases[i%3]
		// One card per charge: thirty unknown outcomes on one card would rightly meet the caps.
		body := fmt.Sprintf(`{"amount":1000,"currency":"usd","payment_method":"pm_sim_approve_visa_card%d","initiator":"customer"}`, 2000+i)
		if got := r.g.charge(k, fmt.Sprintf("rep-%d", i), body); got.status != 202 {
			t.Fatalf("charge %d: got %d %s, want 202", i, got.status, got.body)
		}
	}
	time.Sleep(1500 * time.Millisecond)
	replicas[0].kill9(t) // a replica dies in the middle of the sweep
	r.g.base = bases[1]

	conn, err := pgx.Connect(context.Background(), r.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	deadline := time.Now().Add(60 * time.Second)
	for {
		var pending int
		if err := conn.QueryRow(context.Background(),
			`SELECT count(*) FROM charges WHERE merchant_id = 'm_replicas' AND status <> 'succeeded'`).Scan(&pending); err != nil {
			t.Fatal(err)
		}
		if pending == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d charges still unresolved", pending)
		}
		time.Sleep(300 * time.Millisecond)
	}
	var twice int
	if err := conn.QueryRow(context.Background(), `
		SELECT count(*) FROM (SELECT charge_id FROM charge_events WHERE action = 'resolved'
		 GROUP BY charge_id HAVING count(*) > 1) d`).Scan(&twice); err != nil {
		t.Fatal(err)
	}
	if twice != 0 {
		t.Fatalf("%d charges were resolved more than once", twice)
	}
	for key, effects := range r.g.ledger() {
		if effects != 1 {
			t.Fatalf("key %s: %d effects, want 1", key, effects)
		}
	}
	if got := r.g.do(http.MethodGet, "/v1/charges?status=succeeded&limit=100", k, nil, "").json(t)["data"].([]any); len(got) != n {
		t.Fatalf("succeeded charges: got %d, want %d", len(got), n)
	}
}
