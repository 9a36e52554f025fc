package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/idempotency"
	"github.com/paygate/paygate/internal/dbtest"
	"github.com/paygate/paygate/store"
)

// binary returns the paygate binary built by `make test` (PAYGATE_BIN), or builds one.
func binary(t *testing.T) string {
	t.Helper()
	if b := os.Getenv("PAYGATE_BIN"); b != "" {
		return b
	}
	out := filepath.Join(t.TempDir(), "paygate")
	cmd := exec.Command("go", "build", "-o", out, ".")
	cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	return out
}

// freeAddr returns a local address nothing listens on, for a child process to listen on. The
// port is drawn below the kernel's ephemeral range (32768 and up on Linux), which a port
// the kernel picks (":0") would come from: between this check and the child's listen, any
// outgoing connection of the tests running beside it could take such a port as its own.
func freeAddr(t *testing.T) string {
	t.Helper()
	for range 100 {
		addr := fmt.Sprintf("127.0.0.1:%d", 10000+rand.IntN(22000))
		if l, err := net.Listen("tcp", addr); err == nil {
			l.Close()
			return addr
		}
	}
	t.Fatal("no free port between 10000 and 32000")
	return ""
}

// process is a paygate process the test may kill -9.
type process struct {
	cmd  *exec.Cmd
	logs *syncBuffer
}

func startProcess(t *testing.T, bin string, env []string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(bin, args...), logs: &syncBuffer{}}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.logs, p.logs
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
		if t.Failed() {
			t.Logf("%s log:\n%s", args[0], p.logs)
		}
	})
	return p
}

func (p *process) kill9(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = p.cmd.Wait()
}

func waitListening(t *testing.T, addr string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %s", addr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// killRig is one external simulator and a database shared by gateway processes that come
// and go.
type killRig struct {
	t       *testing.T
	bin     string
	dbURL   string
	simBase string
	env     []string
	gw      *process
	g       *gateway // the HTTP helpers, pointed at the current gateway process
}

func newKillRig(t *testing.T) *killRig {
	t.Helper()
	bin := binary(t)
	dbURL := dbtest.NewDatabase(t)
	simAddr := freeAddr(t)
	startProcess(t, bin, nil, "sim", "--addr", simAddr, "--account", "acct_kill")
	waitListening(t, simAddr)
	r := &killRig{t: t, bin: bin, dbURL: dbURL, simBase: "http://" + simAddr}
	r.env = []string{
		"DATABASE_URL=" + dbURL,
		"PAYGATE_PROCESSOR=stripe",
		"PAYGATE_METRICS_ADDR=127.0.0.1:0",
		"STRIPE_SECRET_KEY=sk_test_kill",
		"STRIPE_API_BASE=" + r.simBase,
		"PAYGATE_COMPLETER_IDLE=500ms",
		"PAYGATE_COMPLETER_INTERVAL=300ms",
		"PAYGATE_KEY_LOCK_MARGIN=500ms",
	}
	var out syncBuffer
	env := map[string]string{"DATABASE_URL": dbURL}
	if code := Run(context.Background(), []string{"migrate"}, &out, &out, func(k string) string { return env[k] }); code != 0 {
		t.Fatalf("migrate: %s", out.String())
	}
	r.g = &gateway{t: t, simBase: r.simBase, env: env, logs: &syncBuffer{}}
	return r
}

// startGateway starts a gateway process on a new port.
func (r *killRig) startGateway() {
	r.t.Helper()
	addr := freeAddr(r.t)
	r.gw = startProcess(r.t, r.bin, append(r.env, "PAYGATE_ADDR="+addr), "serve")
	waitListening(r.t, addr)
	r.g.base = "http://" + addr
	checkAPI(r.t, r.g.base)
}

// sendAsync posts a charge from a client that does not wait for the answer.
func (r *killRig) sendAsync(key, idem, body, timeoutMS string) {
	go func() {
		req, _ := http.NewRequest(http.MethodPost, r.g.base+"/v1/charges", strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Idempotency-Key", idem)
		req.Header.Set("Request-Timeout-Ms", timeoutMS)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
}

// sentOnce waits until the merchant's charge exists and the processor has seen n requests
// under its key, and returns the charge id.
func (r *killRig) sentOnce(key string, n int) string {
	r.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		data := r.g.do(http.MethodGet, "/v1/charges", key, nil, "").json(r.t)["data"].([]any)
		if len(data) == 1 {
			id := data[0].(map[string]any)["id"].(string)
			resp, err := http.Get(r.simBase + "/_sim/ledger?idempotency_key=pg_" + id)
			if err == nil {
				var l struct {
					Data []struct {
						Requests int `json:"requests"`
					} `json:"data"`
				}
				_ = json.NewDecoder(resp.Body).Decode(&l)
				resp.Body.Close()
				if len(l.Data) == 1 && l.Data[0].Requests >= n {
					return id
				}
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.t.Fatal("the charge never reached the processor")
	return ""
}

// settled polls GET /v1/charges until the merchant's only charge leaves processing.
func (r *killRig) settled(key string) map[string]any {
	r.t.Helper()
	var c map[string]any
	eventually(r.t, 30*time.Second, func() error {
		list := r.g.do(http.MethodGet, "/v1/charges", key, nil, "").json(r.t)
		if data := list["data"].([]any); len(data) == 1 {
			if c = data[0].(map[string]any); c["status"] != "processing" {
				return nil
			}
		}
		return fmt.Errorf("the charge never left processing: %v", list)
	})
	return c
}

// TestKillDuringBackoff: the gateway dies while it waits out a Retry-After; after the
// restart the completer carries the charge to one effect and a stored outcome, and an
// inbound retry of the same key gets that outcome.
func TestKillDuringBackoff(t *testing.T) {
	t.Parallel()
	r := newKillRig(t)
	r.startGateway()
	k := r.g.key("m_kill1", "checkout")
	r.g.script(`[{"status":429,"retry_after":"3"}]`)
	r.sendAsync(k, "kill-backoff", visa, "6000")
	r.sentOnce(k, 1) // the first attempt was answered 429: the gateway waits 3 s
	eventually(t, 10*time.Second, func() error {
		if !strings.Contains(r.gw.logs.String(), `"retry scheduled"`) {
			return errors.New("the gateway does not wait out the Retry-After yet")
		}
		return nil
	})
	r.gw.kill9(t)
	r.startGateway()
	c := r.settled(k)
	if c["status"] != "succeeded" {
		t.Fatalf("after the restart: got %v, want succeeded", c)
	}
	if n := r.g.ledger()["pg_"+c["id"].(string)]; n != 1 {
		t.Fatalf("effects: got %d, want 1", n)
	}
	again := r.g.charge(k, "kill-backoff", visa)
	if again.status != 200 || again.json(t)["id"] != c["id"] {
		t.Fatalf("inbound retry: got %d %s, want the settled charge", again.status, again.body)
	}
}

// TestKillAfterProcessorCommitted: the processor commits the effect after the gateway died
// (it was held mid-request); after the restart the completer replays the key, the processor
// answers its stored result, and there is still one effect.
func TestKillAfterProcessorCommitted(t *testing.T) {
	t.Parallel()
	r := newKillRig(t)
	r.startGateway()
	k := r.g.key("m_kill2", "checkout")
	r.g.script(`[{"delay_ms":1500}]`) // the processor executes 1.5 s later, whatever the client does
	r.sendAsync(k, "kill-commit", visa, "8000")
	id := r.sentOnce(k, 1) // the processor holds the request
	r.gw.kill9(t)
	r.g.effectLands(id) // the effect now exists, its outcome stored nowhere at the gateway
	r.startGateway()
	c := r.settled(k)
	if c["status"] != "succeeded" {
		t.Fatalf("after the restart: got %v, want succeeded", c)
	}
	if n := r.g.ledger()["pg_"+c["id"].(string)]; n != 1 {
		t.Fatalf("effects: got %d, want 1", n)
	}
	if again := r.g.charge(k, "kill-commit", visa); again.status != 200 {
		t.Fatalf("inbound retry: got %d %s, want 200", again.status, again.body)
	}
}

// TestCompleterBeforeFirstSend: the state a crash leaves between the intent's commit and the
// first processor call (a processing charge, its key locked by a dead request) is carried to
// one effect by the completer alone.
func TestCompleterBeforeFirstSend(t *testing.T) {
	t.Parallel()
	r := newKillRig(t)
	r.startGateway()
	k := r.g.key("m_kill3", "checkout")
	db, err := store.Open(context.Background(), r.dbURL, store.Config{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	fp, _ := idempotency.FingerprintOf("POST", "/v1/charges", []byte(visa))
	id := charge.NewID()
	if _, err := charge.Begin(context.Background(), db, charge.BeginParams{
		MerchantID: "m_kill3", Key: "before-send", Fingerprint: fp, LockFor: 200 * time.Millisecond,
		New: charge.Charge{ID: id, MerchantID: "m_kill3", Amount: 1000, Currency: "usd", PaymentMethod: "pm_card_visa",
			Initiator: charge.InitiatorCustomer, ReattemptMode: charge.ReattemptManual, ProcessorKey: charge.ProcessorKey(id),
			ProcessorAccount: "acct_kill"},
		Card: &charge.Card{Fingerprint: "fp_kill", Network: "visa"},
	}); err != nil {
		t.Fatal(err)
	}
	c := r.settled(k)
	if c["id"] != id || c["status"] != "succeeded" {
		t.Fatalf("completer: got %v, want charge %s succeeded", c, id)
	}
	if n := r.g.ledger()["pg_"+id]; n != 1 {
		t.Fatalf("effects: got %d, want 1", n)
	}
	if !strings.Contains(r.gw.logs.String(), "completing a charge left mid-flight") {
		t.Fatal("the completer did not log the resumed charge")
	}
}
