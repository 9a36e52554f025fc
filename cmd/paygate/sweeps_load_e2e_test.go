package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestSweepsSettleLostAnswers: `paygate sim` with its events paused (POST /_sim/webhooks
// {"enabled": false}) and a gateway process. The simulator loses the answer of every third
// request until N charges are pending without knowing their PaymentIntent; no event names it.
// When their first check comes due, the sweeps of the account settle them all, with a few
// list pages for all of them, one check and one effect per charge. N is
// PAYGATE_SWEEP_TEST_CHARGES (default 100), PAYGATE_SWEEP_TEST_GATHER the gateway's
// PAYGATE_RECONCILE_SWEEP_GATHER (default 0); the FIGURE lines are the figures.
func TestSweepsSettleLostAnswers(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	t.Parallel()
	n := envCount("PAYGATE_SWEEP_TEST_CHARGES", 100)
	gather := os.Getenv("PAYGATE_SWEEP_TEST_GATHER")
	if gather == "" {
		gather = "0s"
	}
	bin := binary(t)
	dbURL := migratedDatabase(t)
	simAddr, gwAddr, metricsAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	startProcess(t, bin, []string{"PAYGATE_LOG_LEVEL=warn"}, "sim", "--addr", simAddr, "--account", "acct_sweeps",
		"--webhook-url", "http://"+gwAddr+"/webhooks/stripe", "--webhook-secret", hookSecret)
	waitListening(t, simAddr)
	startProcess(t, bin, []string{"DATABASE_URL=" + dbURL, "PAYGATE_PROCESSOR=stripe", "STRIPE_SECRET_KEY=sk_test_sweeps",
		"STRIPE_API_BASE=http://" + simAddr, "STRIPE_WEBHOOK_SECRET=" + hookSecret, "PAYGATE_ADDR=" + gwAddr,
		"PAYGATE_METRICS_ADDR=" + metricsAddr, "PAYGATE_LOG_LEVEL=warn", "PAYGATE_RECONCILE_SCHEDULE=15s,5m,1h,1d*7",
		"PAYGATE_RECONCILE_SWEEP_GATHER=" + gather}, "serve")
	waitListening(t, gwAddr)
	waitListening(t, metricsAddr)
	g := &gateway{t: t, base: "http://" + gwAddr, simBase: "http://" + simAddr, metricsBase: "http://" + metricsAddr,
		env: map[string]string{"DATABASE_URL": dbURL}, logs: &syncBuffer{}}
	checkAPI(t, g.base)
	rp := &replica{base: g.base, metricsBase: g.metricsBase}
	k := g.key("m_swept", "checkout")

	resp, err := http.Post(g.simBase+"/_sim/webhooks", "application/json", strings.NewReader(`{"enabled": false}`))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("pause the simulator's events: %v, %v", resp, err)
	}
	resp.Body.Close()
	steps := make([]string, 0, 30*n)
	for range 10 * n {
		steps = append(steps, `{"drop_response":true}`, `{}`, `{}`)
	}
	g.script("[" + strings.Join(steps, ",") + "]")
	sent, lost, _ := sendUntilLost(g, k, "swept-", 100, n)
	g.script(`[]`)
	stopped := time.Now()
	if lost < n {
		t.Fatalf("%d charges sent, %d lost their answers, want %d", sent, lost, n)
	}

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	succeeded := func() int {
		var s int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM charges WHERE merchant_id = 'm_swept' AND status = 'succeeded'`).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	at, ok := waitFor(90*time.Second, func() bool { return succeeded() == sent })
	var checks, maxChecks int
	if err := conn.QueryRow(ctx, `SELECT count(*), COALESCE(max(k), 0) FROM (SELECT count(*) k FROM reconciliation_checks x
		JOIN charges c ON c.id = x.charge_id WHERE c.merchant_id = 'm_swept' GROUP BY x.charge_id) per`).Scan(&checks, &maxChecks); err != nil {
		t.Fatal(err)
	}
	reads := 0.0
	for _, op := range []string{"retrieve", "list", "search"} {
		for _, res := range []string{"answered", "failed"} {
			v, _ := rp.metric(t, fmt.Sprintf(`paygate_reconciliation_reads_total{op=%q,result=%q}`, op, res))
			reads += v
		}
	}
	sweeps, _ := rp.metric(t, `paygate_reconciliation_sweeps_total{result="done"}`)
	pages, _ := rp.metric(t, `paygate_reconciliation_sweep_pages_total`)
	settled, _ := rp.metric(t, `paygate_reconciliation_sweep_checks_total{kind="resolve"}`)
	eventChecks, _ := rp.metric(t, `paygate_webhook_dispositions_total{disposition="check"}`)
	resp, err = http.Get(g.simBase + "/_sim/ledger")
	if err != nil {
		t.Fatal(err)
	}
	var ledger struct {
		TotalEffects     int `json:"total_effects"`
		MaxEffectsPerKey int `json:"max_effects_per_key"`
	}
	err = json.NewDecoder(resp.Body).Decode(&ledger)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}

	t.Logf("FIGURE sweeps: %d charges sent, %d pending without a PaymentIntent id, simulator events paused; all settled %v after the faults stopped (first check at +15 s, sweeps gathering %s): %v",
		sent, lost, at.Sub(stopped).Round(time.Millisecond), gather, ok)
	t.Logf("FIGURE sweeps: %.0f processor reads for %d lost answers, %.3f per charge; %.0f sweeps read %.0f list pages for %.0f settled charges (%.3f pages per settled charge); %d charges checked, at most %d checks each; %d effects for %d charges, at most %d per key",
		reads, lost, reads/float64(lost), sweeps, pages, settled, pages/max(settled, 1), checks, maxChecks, ledger.TotalEffects, sent, ledger.MaxEffectsPerKey)
	switch {
	case !ok:
		t.Fatalf("%d of %d charges succeeded within 90 s", succeeded(), sent)
	case eventChecks != 0:
		t.Fatalf("event checks: got %.0f, want none with the events paused", eventChecks)
	case sweeps < 1 || settled < float64(lost):
		t.Fatalf("sweeps: got %.0f settling %.0f charges, want the %d lost answers settled by sweeps", sweeps, settled, lost)
	case reads > float64(lost)/2:
		t.Fatalf("reads: got %.0f for %d lost answers, want a few pages for all of them", reads, lost)
	case maxChecks != 1:
		t.Fatalf("checks: at most %d per charge, want 1", maxChecks)
	case ledger.MaxEffectsPerKey != 1 || ledger.TotalEffects != sent:
		t.Fatalf("effects: got %d, at most %d per key; want %d, one per key", ledger.TotalEffects, ledger.MaxEffectsPerKey, sent)
	}
}
