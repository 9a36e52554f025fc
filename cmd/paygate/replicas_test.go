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
//
// A check job the killed replica held stays running until the leading replica's rescuer
// takes it for stuck: once it has run longer than its timeout and PAYGATE_JOB_RESCUE_AFTER
// (2 s and 3 s here, a minute and six in production). The rescuer looks every 30 s, and
// when the killed replica led, another takes the lead within River's 15 s leadership term:
// the job runs again within a minute of the kill, and its charge resolves.
func TestReplicasReconcileOnce(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	t.Parallel()
	r := newKillRig(t)
	// Each replica its own breaker: the thirty unknown outcomes are ten a replica, and a
	// breaker shared by the fleet would open after ten in a row wherever its syncs fell,
	// refusing the last charges before they were sent.
	r.env = append(r.env, "PAYGATE_RECONCILE_SCHEDULE=1s,2s,3s,1h", "PAYGATE_RECONCILE_SWEEP=1s",
		"PAYGATE_JOB_TIMEOUT=2s", "PAYGATE_JOB_RESCUE_AFTER=3s", "PAYGATE_BUDGET_SCOPE=process")
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
	conn, err := pgx.Connect(context.Background(), r.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	unresolved := func() (int, error) {
		var n int
		err := conn.QueryRow(context.Background(),
			`SELECT count(*) FROM charges WHERE merchant_id = 'm_replicas' AND status <> 'succeeded'`).Scan(&n)
		return n, err
	}
	// The sweep has begun: a check resolved a charge.
	eventually(t, 30*time.Second, func() error {
		left, err := unresolved()
		if err == nil && left == n {
			err = fmt.Errorf("no charge resolved yet")
		}
		return err
	})
	replicas[0].kill9(t) // a replica dies in the middle of the sweep
	r.g.base = bases[1]

	eventually(t, 2*time.Minute, func() error {
		left, err := unresolved()
		if err == nil && left != 0 {
			err = fmt.Errorf("%d charges still unresolved", left)
		}
		return err
	})
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
