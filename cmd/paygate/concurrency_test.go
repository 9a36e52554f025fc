package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestConcurrentChargesUnderFaults: 1 000 concurrent charges while the processor answers a
// random mix of faults. Every logical operation makes at most one effect, every answer is a
// final state or pending (never a 500), and the effects agree with the answers.
func TestConcurrentChargesUnderFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	t.Parallel()
	const n = 1000
	g := startGateway(t, "PAYGATE_LOG_LEVEL", "warn")
	k := g.key("m_conc", "checkout")

	rng := rand.New(rand.NewPCG(7, 7))
	faults := []string{
		`{"status":503}`, `{"status":429,"retry_after":"1"}`, `{"drop_response":true}`,
		`{"status":500,"after_commit":true}`, `{"refuse":true}`, `{"delay_ms":300}`,
	}
	steps := make([]string, 0, 2*n)
	for range 2 * n {
		if rng.Float64() < 0.3 {
			steps = append(steps, faults[rng.IntN(len(faults))])
		} else {
			steps = append(steps, `{}`)
		}
	}
	g.script("[" + strings.Join(steps, ",") + "]")
	if resp, err := http.Post(g.simBase+"/_sim/faults", "application/json", strings.NewReader(`{"latency_ms":5}`)); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}

	type result struct {
		status int
		body   map[string]any
		err    error
	}
	results := make([]result, n)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: n}, Timeout: 30 * time.Second}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			// One card per charge: a thousand charges on one card in seconds would rightly
			// meet the network caps.
			body := fmt.Sprintf(`{"amount":1000,"currency":"usd","payment_method":"pm_sim_approve_visa_card%d","initiator":"customer"}`, 1000+i)
			req, _ := http.NewRequest(http.MethodPost, g.base+"/v1/charges", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+k)
			req.Header.Set("Idempotency-Key", fmt.Sprintf("conc-%d", i))
			resp, err := client.Do(req)
			if err != nil {
				results[i].err = err
				return
			}
			defer resp.Body.Close()
			results[i].status = resp.StatusCode
			results[i].err = json.NewDecoder(resp.Body).Decode(&results[i].body)
		}()
	}
	close(start)
	wg.Wait()

	ledger := g.ledger()
	counts := map[string]int{}
	for i, r := range results {
		if r.err != nil {
			t.Fatalf("charge %d: %v", i, r.err)
		}
		status, _ := r.body["status"].(string)
		counts[fmt.Sprintf("%d %s", r.status, status)]++
		switch {
		case r.status == 200 && status == "succeeded",
			r.status == 402 && status == "declined",
			r.status == 202 && status == "pending",
			(r.status == 503 || r.status == 504) && status == "failed":
		default:
			t.Fatalf("charge %d: got %d %v, want a final state or pending", i, r.status, r.body)
		}
		id, _ := r.body["id"].(string)
		effects := ledger["pg_"+id]
		switch {
		case effects > 1:
			t.Fatalf("charge %s: %d effects at the processor, want at most 1", id, effects)
		case status == "succeeded" && effects != 1:
			t.Fatalf("charge %s succeeded with %d effects", id, effects)
		case status == "failed" && effects != 0:
			t.Fatalf("charge %s answered failed but the processor holds its effect", id)
		}
	}
	t.Logf("answers: %v", counts)
}
