package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"testing"
)

// externalSim is a `paygate sim` process the test stops and starts again on one address, as
// an operator restarting it without --account would: each start answers a new random account.
type externalSim struct {
	t    *testing.T
	bin  string
	addr string
	proc *process
}

// simPortFirst and simPortLast bound where the tests of this file bind their simulators: an
// address that must stay the same across restarts is chosen here rather than by the kernel.
// Each simulator gets a port of its own, never handed out again by this process, so that a
// test cannot take the port of another's simulator while it is down.
const simPortFirst, simPortLast = 32100, 32999

var simPortNext atomic.Int64

func init() {
	// Test processes running at once start at different places in the range.
	simPortNext.Store(int64(os.Getpid() % (simPortLast - simPortFirst + 1)))
}

func startExternalSim(t *testing.T) *externalSim {
	t.Helper()
	s := &externalSim{t: t, bin: binary(t)}
	for range simPortLast - simPortFirst + 1 {
		port := simPortFirst + int(simPortNext.Add(1)%(simPortLast-simPortFirst+1))
		addr := fmt.Sprintf("127.0.0.1:%d", port)
		if l, err := net.Listen("tcp", addr); err == nil {
			l.Close()
			s.addr = addr
			break
		}
	}
	if s.addr == "" {
		t.Fatalf("no free port in %d-%d", simPortFirst, simPortLast)
	}
	s.start()
	return s
}

func (s *externalSim) base() string { return "http://" + s.addr }

func (s *externalSim) start() {
	s.t.Helper()
	s.proc = startProcess(s.t, s.bin, nil, "sim", "--addr", s.addr)
	waitListening(s.t, s.addr)
}

// kill stops the simulator at once (kill -9): connections to it are refused from then on.
func (s *externalSim) kill() {
	s.t.Helper()
	s.proc.kill9(s.t)
}

// account returns the account the running simulator answers.
func (s *externalSim) account() string {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.base()+"/v1/account", nil)
	req.Header.Set("Authorization", "Bearer sk_test_x")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	var a struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil || a.ID == "" {
		s.t.Fatalf("GET /v1/account: %v %+v", err, a)
	}
	return a.ID
}

// startGatewayAt boots serve against the external simulator.
func startGatewayAt(t *testing.T, s *externalSim, extraEnv ...string) *gateway {
	t.Helper()
	g := startGateway(t, append([]string{"PAYGATE_PROCESSOR", "stripe", "STRIPE_SECRET_KEY", "sk_test_x", "STRIPE_API_BASE", s.base()},
		extraEnv...)...)
	g.simBase = s.base()
	return g
}

const mastercard = `{"amount":1000,"currency":"usd","payment_method":"pm_card_mastercard","initiator":"customer"}`

// wantAccountChanged checks an answer is the final 422 processor_account_changed.
func wantAccountChanged(t *testing.T, r reply) {
	t.Helper()
	if r.status != 422 {
		t.Fatalf("got %d %s, want 422 processor_account_changed", r.status, r.body)
	}
	f, _ := r.json(t)["failure"].(map[string]any)
	if r.json(t)["status"] != "failed" || f["code"] != "processor_account_changed" || f["retryable"] != false {
		t.Fatalf("got %s, want failed, processor_account_changed, not retryable", r.body)
	}
}

// TestProcessorAccountChangesWhileServing: the processor behind STRIPE_API_BASE is restarted
// as another account while serve runs. A charge recorded at the old account is never sent to
// the new one — its retry is answered 422 processor_account_changed and the new processor
// holds nothing under its key — while new charges go to, and are recorded at, the new one.
func TestProcessorAccountChangesWhileServing(t *testing.T) {
	t.Parallel()

	t.Run("the processor went away and came back", func(t *testing.T) {
		t.Parallel()
		s := startExternalSim(t)
		g := startGatewayAt(t, s)
		k := g.key("m_acct_down", "checkout")
		first := s.account()

		s.kill()
		r := g.charge(k, "k1", mastercard, "Request-Timeout-Ms", "3000")
		if r.status != 503 || r.json(t)["status"] != "failed" {
			t.Fatalf("with the processor down: got %d %s, want 503 failed", r.status, r.body)
		}
		if f := r.json(t)["failure"].(map[string]any); f["retryable"] != true {
			t.Fatalf("with the processor down: got %s, want a retryable failure", r.body)
		}
		id := r.json(t)["id"].(string)

		s.start()
		if second := s.account(); second == first {
			t.Fatalf("the restarted simulator answers %s again, want a new account", second)
		}
		wantAccountChanged(t, g.charge(k, "k1", mastercard))
		wantAccountChanged(t, g.charge(k, "k1", mastercard)) // stored: replayed as it is
		if n, ok := g.ledger()["pg_"+id]; ok {
			t.Fatalf("the new account holds %d effects under pg_%s, want none", n, id)
		}

		// A new charge goes to the account the processor is now.
		fresh := g.charge(k, "k2", mastercard)
		if fresh.status != 200 {
			t.Fatalf("a new charge: got %d %s, want 200 succeeded at the new account", fresh.status, fresh.body)
		}
		if n := g.ledger()["pg_"+fresh.json(t)["id"].(string)]; n != 1 {
			t.Fatalf("a new charge: %d effects at the new account, want 1", n)
		}
	})

	t.Run("the processor restarted between two requests", func(t *testing.T) {
		t.Parallel()
		s := startExternalSim(t)
		// Every confirmation of the account reads it: no read is fresh enough to stand in.
		g := startGatewayAt(t, s, "PAYGATE_ACCOUNT_FRESH", "1ns")
		k := g.key("m_acct_swap", "checkout")
		op := g.key("m_acct_swap", "operator")

		// A charge failed retryably (answered 503 before execution) at the first account...
		g.script(`[{"status":503},{"status":503},{"status":503},{"status":503},{"status":503}]`)
		r := g.charge(k, "k1", mastercard, "Request-Timeout-Ms", "2000")
		if r.json(t)["status"] != "failed" || r.json(t)["failure"].(map[string]any)["retryable"] != true {
			t.Fatalf("503s: got %d %s, want failed, retryable", r.status, r.body)
		}
		failedID := r.json(t)["id"].(string)
		// ... and one whose outcome is unknown (charged, then answered 500).
		g.script(`[{"status":500,"after_commit":true}]`)
		p := g.charge(k, "k3", mastercard)
		if p.status != 202 {
			t.Fatalf("500 after commit: got %d %s, want 202 pending", p.status, p.body)
		}
		pendingID := p.json(t)["id"].(string)

		// The processor restarts as another account; no request of the gateway failed on
		// the way, so only a confirmation of the account can tell: it reads the account
		// again (here every time; in production once its last read is older than 2 s).
		s.kill()
		s.start()

		wantAccountChanged(t, g.charge(k, "k1", mastercard))
		if n, ok := g.ledger()["pg_"+failedID]; ok {
			t.Fatalf("the new account holds %d effects under pg_%s, want none", n, failedID)
		}

		// Reconciliation reads nothing at the new account: the pending charge goes to
		// review as a charge of another account, never "not found" there.
		rc := g.do(http.MethodPost, "/v1/charges/"+pendingID+"/reconcile", op, nil, "")
		if rc.status != 200 {
			t.Fatalf("reconcile: got %d %s", rc.status, rc.body)
		}
		chk, _ := rc.json(t)["check"].(map[string]any)
		d, _ := chk["decision"].(map[string]any)
		ev, _ := chk["evidence"].(map[string]any)
		if d["kind"] != "review" || d["reason"] != "other_account" || ev["account"] != s.account() {
			t.Fatalf("reconcile: got %s, want review for other_account, at the new account", rc.body)
		}
		if ev["list"] != nil || ev["search"] != nil || ev["retrieve"] != nil {
			t.Fatalf("reconcile read the new account for a charge of the old one: %v", ev)
		}
		if st := rc.json(t)["charge"].(map[string]any)["status"]; st != "pending" {
			t.Fatalf("the charge after the check: got %v, want still pending", st)
		}
	})

	// The processor restarts as another account at once while the gateway is idle: its idle
	// connections close, no request fails, and the next charge goes out over a new connection
	// to the new account — its card read first (a card not read before), or its payment (a
	// card read before, cached).
	for _, tc := range []struct{ name, body string }{
		{"the processor restarted while the gateway was idle, card read before", mastercard},
		{"the processor restarted while the gateway was idle, card not read before",
			`{"amount":1000,"currency":"usd","payment_method":"pm_sim_approve_visa_card4716","initiator":"customer"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := startExternalSim(t)
			g := startGatewayAt(t, s, "PAYGATE_ACCOUNT_FRESH", "1ns")
			k := g.key("m_acct_idle", "checkout")
			op := g.key("m_acct_idle", "operator")
			if r := g.charge(k, "warm", mastercard); r.status != 200 {
				t.Fatalf("first charge: got %d %s", r.status, r.body)
			}
			s.kill()
			s.start()
			g.script(`[{"status":500,"after_commit":true}]`)
			p := g.charge(k, "k_idle", tc.body)
			if p.status != 202 {
				t.Fatalf("500 after commit: got %d %s, want 202 pending", p.status, p.body)
			}
			id := p.json(t)["id"].(string)
			// The charge is recorded where its key was used: reconciliation, which confirms
			// the account (reading it again: no read is fresh enough here), reads it there and
			// finds it paid, instead of leaving a paid charge to review as another account's.
			rc := g.do(http.MethodPost, "/v1/charges/"+id+"/reconcile", op, nil, "")
			if rc.status != 200 {
				t.Fatalf("reconcile: got %d %s", rc.status, rc.body)
			}
			if st := rc.json(t)["charge"].(map[string]any)["status"]; st != "succeeded" {
				t.Fatalf("the charge after the check: got %v (%s), want succeeded at the new account", st, rc.body)
			}
			// The card's history holds the attempt under the new account and the card's
			// fingerprint there, where the network rules and the audit report count it.
			var pm struct {
				PaymentMethod string `json:"payment_method"`
			}
			if err := json.Unmarshal([]byte(tc.body), &pm); err != nil {
				t.Fatal(err)
			}
			fp := g.fingerprint(pm.PaymentMethod)
			rep := g.do(http.MethodGet, "/v1/reports/reattempts", g.key("m_acct_idle", "auditor"), nil, "")
			var doc reportDoc
			if err := json.Unmarshal(rep.body, &doc); err != nil || rep.status != 200 {
				t.Fatalf("report: got %d %s (%v)", rep.status, rep.body, err)
			}
			found := false
			for _, row := range doc.Data {
				found = found || (row.ProcessorAccount == s.account() && row.Fingerprint == fp && row.Attempts == 1)
			}
			if !found {
				t.Fatalf("report: no row for the card at the new account (%s, %s) with the charge's attempt: %s", s.account(), fp, rep.body)
			}
		})
	}
}
