package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// envCount is the positive integer in the environment variable name, or def.
func envCount(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// TestWebhooksSettleLostAnswers: `paygate sim --webhook-url --webhook-secret` and a gateway
// process. The simulator loses the answer of every third request (it executes the request,
// then drops the connection: the circuit breaker, which opens at half the requests failing,
// stays closed), so charges end pending without knowing their PaymentIntent; the simulator's
// events name it. Charges are sent until N of them are pending so. Once the faults stop,
// every charge is settled within 10 s by the check its event triggered, with at most one
// processor read per lost answer, and one effect per key. N is PAYGATE_WEBHOOK_TEST_CHARGES
// (default 100; scripts/bench-webhooks.sh asks for 1 000), the charges are sent at
// PAYGATE_WEBHOOK_TEST_RATE per second (default 100: a third of them lost, under the
// default reconciliation read rate of 50/s); the FIGURE lines are the benchmark's.
func TestWebhooksSettleLostAnswers(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	t.Parallel()
	n := envCount("PAYGATE_WEBHOOK_TEST_CHARGES", 100)
	perSecond := envCount("PAYGATE_WEBHOOK_TEST_RATE", 100)
	bin := binary(t)
	dbURL := migratedDatabase(t)
	simAddr, gwAddr, metricsAddr := freeAddr(t), freeAddr(t), freeAddr(t)
	startProcess(t, bin, []string{"PAYGATE_LOG_LEVEL=warn"}, "sim", "--addr", simAddr, "--account", "acct_hooks",
		"--webhook-url", "http://"+gwAddr+"/webhooks/stripe", "--webhook-secret", hookSecret)
	waitListening(t, simAddr)
	startProcess(t, bin, []string{"DATABASE_URL=" + dbURL, "PAYGATE_PROCESSOR=stripe", "STRIPE_SECRET_KEY=sk_test_hooks",
		"STRIPE_API_BASE=http://" + simAddr, "STRIPE_WEBHOOK_SECRET=" + hookSecret, "PAYGATE_ADDR=" + gwAddr,
		"PAYGATE_METRICS_ADDR=" + metricsAddr, "PAYGATE_LOG_LEVEL=warn"}, "serve")
	waitListening(t, gwAddr)
	waitListening(t, metricsAddr)
	g := &gateway{t: t, base: "http://" + gwAddr, simBase: "http://" + simAddr, metricsBase: "http://" + metricsAddr,
		env: map[string]string{"DATABASE_URL": dbURL}, logs: &syncBuffer{}}
	checkAPI(t, g.base)
	rp := &replica{base: g.base, metricsBase: g.metricsBase}
	k := g.key("m_lost", "checkout")

	// Every third request loses its answer, for longer than the test sends.
	steps := make([]string, 0, 30*n)
	for range 10 * n {
		steps = append(steps, `{"drop_response":true}`, `{}`, `{}`)
	}
	g.script("[" + strings.Join(steps, ",") + "]")
	start := time.Now()
	sentCharges, lost, statuses := sendUntilLost(g, k, "lost-", perSecond, n)
	sent := time.Since(start)
	// The faults stop.
	g.script(`[]`)
	stopped := time.Now()
	if lost < n {
		t.Fatalf("%d charges sent, %d lost their answers (statuses %v), want %d", sentCharges, lost, statuses, n)
	}

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	counts := func() (succeeded, pending int) {
		t.Helper()
		if err := conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE status = 'succeeded'), count(*) FILTER (WHERE status = 'pending')
			FROM charges WHERE merchant_id = 'm_lost'`).Scan(&succeeded, &pending); err != nil {
			t.Fatal(err)
		}
		return succeeded, pending
	}
	_, pendingAtStop := counts()
	at, ok := waitFor(60*time.Second, func() bool { s, _ := counts(); return s == sentCharges })
	succeeded, pending := counts()
	settledAfter := at.Sub(stopped)

	reads := 0.0
	for _, op := range []string{"retrieve", "list", "search"} {
		for _, res := range []string{"answered", "failed"} {
			v, _ := rp.metric(t, fmt.Sprintf(`paygate_reconciliation_reads_total{op=%q,result=%q}`, op, res))
			reads += v
		}
	}
	received, _ := rp.metric(t, `paygate_webhook_events_total{result="received"}`)
	refused, _ := rp.metric(t, `paygate_webhook_events_total{result="refused"}`)
	checks, _ := rp.metric(t, `paygate_webhook_dispositions_total{disposition="check"}`)

	resp, err := http.Get(g.simBase + "/_sim/ledger")
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

	t.Logf("FIGURE webhooks: %d charges sent in %v at %d/s, every third answer lost: %d pending without a PaymentIntent id (answers %v); %d still pending when the faults stopped",
		sentCharges, sent.Round(time.Millisecond), perSecond, lost, statuses, pendingAtStop)
	if ok {
		t.Logf("FIGURE webhooks: all %d lost answers settled %v after the faults stopped (target <= 10 s)", lost, settledAfter.Round(time.Millisecond))
	} else {
		t.Logf("FIGURE webhooks: %d of %d charges succeeded within 60 s after the faults stopped, %d still pending", succeeded, sentCharges, pending)
	}
	t.Logf("FIGURE webhooks: %.0f processor reads by reconciliation for %d lost answers, %.3f per charge (target <= 1); %.0f deliveries received, %.0f refused, %.0f checks triggered; %d effects for %d charges, at most %d per key",
		reads, lost, reads/float64(lost), received, refused, checks, ledger.TotalEffects, sentCharges, ledger.MaxEffectsPerKey)
	switch {
	case !ok:
		t.Fatalf("%d of %d charges succeeded within 60 s", succeeded, sentCharges)
	case settledAfter > 10*time.Second:
		t.Fatalf("settled %v after the faults stopped, want within 10 s", settledAfter)
	case reads > float64(lost):
		t.Fatalf("reads: got %.0f for %d lost answers, want at most one per charge", reads, lost)
	case ledger.MaxEffectsPerKey != 1 || ledger.TotalEffects != sentCharges:
		t.Fatalf("effects: got %d, at most %d per key; want %d, one per key", ledger.TotalEffects, ledger.MaxEffectsPerKey, sentCharges)
	case refused != 0:
		t.Fatalf("refused deliveries: got %.0f, want none", refused)
	}
}

// sendUntilLost sends charges with key k at perSecond a second, each keyed prefix and its
// number, until n of them answered 202 (their answers lost) or 10·n were sent. It returns how
// many it sent, how many were lost, and the answers' statuses (0: no answer).
func sendUntilLost(g *gateway, k, prefix string, perSecond, n int) (sent, lost int, statuses map[int]int) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	var (
		wg sync.WaitGroup
		mu sync.Mutex
	)
	statuses = map[int]int{}
	tick := time.NewTicker(time.Second / time.Duration(perSecond))
	defer tick.Stop()
	for i := 0; ; i++ {
		mu.Lock()
		enough := lost >= n
		mu.Unlock()
		if enough || i >= 10*n {
			break
		}
		<-tick.C
		sent++
		wg.Go(func() {
			req, _ := http.NewRequest(http.MethodPost, g.base+"/v1/charges", strings.NewReader(visa))
			req.Header.Set("Authorization", "Bearer "+k)
			req.Header.Set("Idempotency-Key", fmt.Sprintf("%s%d", prefix, i))
			req.Header.Set("Request-Timeout-Ms", "2000")
			status := 0
			if resp, err := client.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				status = resp.StatusCode
			}
			mu.Lock()
			statuses[status]++
			if status == http.StatusAccepted {
				lost++
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	return sent, lost, statuses
}
