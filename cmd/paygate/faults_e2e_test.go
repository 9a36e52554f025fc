package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/idempotency"
	"github.com/paygate/paygate/internal/sim"
	"github.com/paygate/paygate/store"
)

// detail returns a charge's attempts_detail rows.
func (g *gateway) detail(key, id string) []map[string]any {
	g.t.Helper()
	r := g.do(http.MethodGet, "/v1/charges/"+id, key, nil, "")
	if r.status != 200 {
		g.t.Fatalf("GET charge %s: %d %s", id, r.status, r.body)
	}
	var c struct {
		Detail []map[string]any `json:"attempts_detail"`
	}
	if err := json.Unmarshal(r.body, &c); err != nil {
		g.t.Fatal(err)
	}
	return c.Detail
}

// TestRetryCasesThroughTheAPI runs the retry engine's cases through the whole gateway.
func TestRetryCasesThroughTheAPI(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name         string
		script       string
		pm           string
		timeoutMS    string
		wantHTTP     int
		wantStatus   string
		wantFailure  string
		wantAttempts int
		wantEffects  int // effects at the processor under the charge's key
	}{
		{"503, 503, 200", `[{"status":503},{"status":503}]`, "pm_card_visa", "", 200, "succeeded", "", 3, 1},
		{"429 Retry-After 30 with 5 s left", `[{"status":429,"retry_after":"30"}]`, "pm_card_visa", "5000", 504, "failed", "deadline_exceeded", 1, 0},
		{"processor refuses the request", ``, "pm_card_visa", "", 422, "failed", "invalid_request", 1, 0},
		{"lost response then success, same key", `[{"drop_response":true}]`, "pm_card_visa", "", 200, "succeeded", "", 2, 1},
		{"stored 500 after commit", `[{"status":500,"after_commit":true}]`, "pm_card_visa", "", 202, "pending", "", 1, 1},
		{"timeout after send, then the deadline", `[{"blackhole":true},{"blackhole":true},{"blackhole":true},{"blackhole":true}]`, "pm_card_visa", "1500", 202, "pending", "", 1, 0},
		{"decline is never retried", `[]`, "pm_card_chargeDeclinedStolenCard", "", 402, "declined", "", 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := startGateway(t)
			k := g.key("m_retry", "checkout")
			if tc.script != "" {
				g.script(tc.script)
			}
			var headers []string
			if tc.timeoutMS != "" {
				headers = []string{"Request-Timeout-Ms", tc.timeoutMS}
			}
			start := time.Now()
			amount := "1000"
			if tc.name == "processor refuses the request" {
				amount = "10" // below the processor's minimum: refused as invalid, nothing executed
			}
			r := g.charge(k, "case", `{"amount":`+amount+`,"currency":"usd","payment_method":"`+tc.pm+`","initiator":"customer"}`, headers...)
			elapsed := time.Since(start)
			if r.status != tc.wantHTTP {
				t.Fatalf("HTTP status: got %d %s, want %d", r.status, r.body, tc.wantHTTP)
			}
			body := r.json(t)
			if body["status"] != tc.wantStatus {
				t.Fatalf("status: got %v, want %s", body["status"], tc.wantStatus)
			}
			if tc.wantFailure != "" {
				f := body["failure"].(map[string]any)
				if f["code"] != tc.wantFailure {
					t.Fatalf("failure: got %v, want %s", f, tc.wantFailure)
				}
				if r.status >= 500 && r.header.Get("Retry-After") == "" {
					t.Fatalf("a %d must carry Retry-After", r.status)
				}
				if tc.name == "429 Retry-After 30 with 5 s left" {
					// The processor's wait, less the time spent: a retry sooner would hit it
					// again too early.
					if ra, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || ra < 24 || ra > 30 {
						t.Fatalf("Retry-After: got %q, want the processor's 30 s less the %v spent", r.header.Get("Retry-After"), elapsed)
					}
				}
			}
			if tc.timeoutMS != "" {
				budget, _ := time.ParseDuration(tc.timeoutMS + "ms")
				if elapsed > budget+300*time.Millisecond {
					t.Fatalf("answered after %v, past the caller's %v deadline", elapsed, budget)
				}
			}
			id := body["id"].(string)
			detail := g.detail(k, id)
			if tc.wantAttempts > 0 && len(detail) < tc.wantAttempts {
				t.Fatalf("attempts: got %d, want at least %d", len(detail), tc.wantAttempts)
			}
			if tc.name != "timeout after send, then the deadline" && len(detail) != tc.wantAttempts {
				t.Fatalf("attempts: got %d, want %d: %v", len(detail), tc.wantAttempts, detail)
			}
			if got := g.ledger()["pg_"+id]; got != tc.wantEffects {
				t.Fatalf("effects under pg_%s: got %d, want %d", id, got, tc.wantEffects)
			}
			if tc.name == "503, 503, 200" {
				// Rising backoff ceilings, and every retry spent a budget token.
				for i, a := range detail[:2] {
					if a["class"] != "retry" || a["http_status"].(float64) != 503 {
						t.Fatalf("attempt %d: got %v, want a 503 retry", i+1, a)
					}
					if a["budget_tokens_after"].(float64) >= a["budget_tokens_before"].(float64) {
						t.Fatalf("attempt %d: the retry spent no budget token: %v", i+1, a)
					}
				}
			}
			if tc.name == "processor refuses the request" && detail[0]["budget_tokens_before"] != detail[0]["budget_tokens_after"] {
				t.Fatalf("a terminal answer spent a budget token: %v", detail[0])
			}
		})
	}
}

// TestProcessorUnreachable: every attempt refused at connect (nothing can have reached the
// processor) ends failed, retryable, with 503 and Retry-After.
func TestProcessorUnreachable(t *testing.T) {
	t.Parallel()
	s := sim.New(sim.Config{})
	ts := httptest.NewServer(s)
	g := startGateway(t, "PAYGATE_PROCESSOR", "stripe", "STRIPE_SECRET_KEY", "sk_test_unreachable", "STRIPE_API_BASE", ts.URL)
	ts.Close() // the processor goes away: connections are refused
	k := g.key("m_down", "checkout")
	r := g.charge(k, "down", visa, "Request-Timeout-Ms", "3000")
	if (r.status != 503 && r.status != 504) || r.header.Get("Retry-After") == "" {
		t.Fatalf("got %d (Retry-After %q) %s, want 503 or 504 with Retry-After", r.status, r.header.Get("Retry-After"), r.body)
	}
	b := r.json(t)
	f := b["failure"].(map[string]any)
	if b["status"] != "failed" || f["retryable"] != true {
		t.Fatalf("got %s, want failed and retryable", r.body)
	}
	// A retryable failure is not stored: the same key runs the same operation again,
	// under the same processor key.
	again := g.charge(k, "down", visa, "Request-Timeout-Ms", "3000")
	if again.json(t)["id"] != b["id"] {
		t.Fatalf("retry of a failed charge: got charge %v, want the same charge %v", again.json(t)["id"], b["id"])
	}
}

// TestInUseAndHangUp: a second request while the first runs gets 409; a caller that hangs
// up mid-retry still gets its charge carried to one outcome.
func TestInUseAndHangUp(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	k := g.key("m_hang", "checkout")
	// The processor is slow, then fails twice before answering.
	g.script(`[{"status":503,"delay_ms":600},{"status":503},{}]`)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, g.base+"/v1/charges", strings.NewReader(visa))
	req.Header.Set("Authorization", "Bearer "+k)
	req.Header.Set("Idempotency-Key", "hang")
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			t.Errorf("the caller was answered %d before its own timeout", resp.StatusCode)
		}
	}()
	// The first request holds the key: its charge is in flight.
	eventually(t, 10*time.Second, func() error {
		list := g.do(http.MethodGet, "/v1/charges?status=processing", k, nil, "")
		if data, _ := list.json(t)["data"].([]any); len(data) != 1 {
			return fmt.Errorf("charges processing: got %s, want the first request's", list.body)
		}
		return nil
	})
	if r := g.charge(k, "hang", visa); r.status != 409 || r.json(t)["error"].(map[string]any)["code"] != "idempotency_key_in_use" {
		t.Fatalf("concurrent request: got %d %s, want 409 idempotency_key_in_use", r.status, r.body)
	}
	wg.Wait()
	// The gateway finishes the charge although its caller left; the caller's retry with
	// the same key then gets the settled answer.
	eventually(t, 10*time.Second, func() error {
		r := g.charge(k, "hang", visa)
		switch {
		case r.status == 409:
			return fmt.Errorf("after hang-up: got %d %s, want the settled 200", r.status, r.body)
		case r.status != 200:
			t.Fatalf("after hang-up: got %d %s, want the settled 200", r.status, r.body)
		}
		if got := r.json(t)["attempts"].(float64); got != 3 {
			t.Fatalf("attempts: got %v, want 3", got)
		}
		return nil
	})
	for key, n := range g.ledger() {
		if n != 1 {
			t.Fatalf("key %s has %d effects, want 1", key, n)
		}
	}
}

// TestStaleLockResumes: a request that died holding its key (a crashed process) leaves a
// charge mid-flight; once the lock expires, a retry with the same key resumes the same
// charge under the same processor key.
func TestStaleLockResumes(t *testing.T) {
	t.Parallel()
	g := startGateway(t)
	k := g.key("m_crash", "checkout")
	db, err := store.Open(context.Background(), g.env["DATABASE_URL"], store.Config{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fp, _ := idempotency.FingerprintOf("POST", "/v1/charges", []byte(visa))
	id := charge.NewID()
	_, err = charge.Begin(context.Background(), db, charge.BeginParams{
		MerchantID: "m_crash", Key: "crashed", Fingerprint: fp, LockFor: -time.Second,
		New: charge.Charge{ID: id, MerchantID: "m_crash", Amount: 1000, Currency: "usd", PaymentMethod: "pm_card_visa",
			Initiator: charge.InitiatorCustomer, ReattemptMode: charge.ReattemptManual, ProcessorKey: charge.ProcessorKey(id)},
		Card: &charge.Card{Fingerprint: "fp_crash", Network: "visa"},
	})
	if err != nil {
		t.Fatal(err)
	}
	r := g.charge(k, "crashed", visa)
	if r.status != 200 || r.json(t)["id"] != id {
		t.Fatalf("resume: got %d %s, want charge %s succeeded", r.status, r.body, id)
	}
	if n := g.ledger()["pg_"+id]; n != 1 {
		t.Fatalf("effects under pg_%s: got %d, want 1", id, n)
	}
}
