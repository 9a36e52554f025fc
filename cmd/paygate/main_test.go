package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/internal/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// gateway is a running `paygate serve` with its own database and built-in simulator.
type gateway struct {
	t           *testing.T
	base        string // http://host:port of the API
	simBase     string // http://host:port of the simulator
	metricsBase string // http://host:port of the metrics and the profiler
	env         map[string]string
	logs        *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startGateway boots the real serve command on loopback ports with a database of its own
// (or the one extraEnv names in DATABASE_URL), with the built-in simulator unless extraEnv
// sets PAYGATE_PROCESSOR.
func startGateway(t *testing.T, extraEnv ...string) *gateway {
	t.Helper()
	env := map[string]string{
		"PAYGATE_PROCESSOR":    "sim",
		"PAYGATE_ADDR":         "127.0.0.1:0",
		"PAYGATE_SIM_ADDR":     "127.0.0.1:0",
		"PAYGATE_METRICS_ADDR": "127.0.0.1:0",
		"PAYGATE_LOG_LEVEL":    "debug",
		// The built-in simulator's events would settle the pending charges the tests make
		// before their checks do: webhooks_e2e_test.go turns them on.
		"PAYGATE_SIM_WEBHOOKS": "off",
	}
	for i := 0; i+1 < len(extraEnv); i += 2 {
		env[extraEnv[i]] = extraEnv[i+1]
	}
	if env["DATABASE_URL"] == "" {
		env["DATABASE_URL"] = dbtest.NewDatabase(t)
	}
	g := &gateway{t: t, env: env, logs: &syncBuffer{}}
	getenv := func(k string) string { return env[k] }
	var out bytes.Buffer
	if code := Run(context.Background(), []string{"migrate"}, &out, g.logs, getenv); code != 0 {
		t.Fatalf("migrate: exit %d: %s", code, g.logs)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- runServe(ctx, nil, g.logs, getenv, &serveHooks{listening: func(api, sim, metrics string) {
			g.base, g.simBase, g.metricsBase = "http://"+api, "http://"+sim, "http://"+metrics
			close(ready)
		}})
	}()
	select {
	case <-ready:
		checkAPI(t, g.base)
	case err := <-done:
		t.Fatalf("serve exited at start: %v\n%s", err, g.logs)
	case <-time.After(20 * time.Second):
		t.Fatalf("serve did not start\n%s", g.logs)
	}
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Error("serve did not stop within 20 s")
		}
		if t.Failed() {
			t.Logf("gateway log:\n%s", g.logs)
		}
	})
	return g
}

// key creates an API key through the real keys command.
func (g *gateway) key(merchant, role string) string {
	g.t.Helper()
	var out, errOut bytes.Buffer
	code := Run(context.Background(), []string{"keys", "create", "--merchant", merchant, "--role", role}, &out, &errOut,
		func(k string) string { return g.env[k] })
	if code != 0 {
		g.t.Fatalf("keys create: exit %d: %s", code, errOut.String())
	}
	return strings.TrimSpace(out.String())
}

type reply struct {
	status int
	header http.Header
	body   []byte
}

func (r reply) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, r.body)
	}
	return m
}

func (g *gateway) do(method, path, key string, headers map[string]string, body string) reply {
	g.t.Helper()
	req, err := http.NewRequest(method, g.base+path, strings.NewReader(body))
	if err != nil {
		g.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		g.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return reply{status: resp.StatusCode, header: resp.Header, body: b}
}

// metrics returns what the metrics listener serves on /metrics.
func (g *gateway) metrics() string {
	g.t.Helper()
	resp, err := http.Get(g.metricsBase + "/metrics")
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		g.t.Fatalf("metrics: got %d, %v", resp.StatusCode, err)
	}
	return string(b)
}

// charge posts a charge with an idempotency key.
func (g *gateway) charge(key, idem, body string, headers ...string) reply {
	g.t.Helper()
	h := map[string]string{"Idempotency-Key": idem}
	for i := 0; i+1 < len(headers); i += 2 {
		h[headers[i]] = headers[i+1]
	}
	return g.do(http.MethodPost, "/v1/charges", key, h, body)
}

// script queues simulator fault steps for the next write requests.
func (g *gateway) script(steps string) {
	g.t.Helper()
	resp, err := http.Post(g.simBase+"/_sim/script", "application/json", strings.NewReader(steps))
	if err != nil {
		g.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		g.t.Fatalf("sim script: status %d", resp.StatusCode)
	}
}

// ledger returns the simulator's effects per processor idempotency key.
func (g *gateway) ledger() map[string]int {
	g.t.Helper()
	resp, err := http.Get(g.simBase + "/_sim/ledger")
	if err != nil {
		g.t.Fatal(err)
	}
	defer resp.Body.Close()
	var l struct {
		Data []struct {
			IdempotencyKey string `json:"idempotency_key"`
			Effects        int    `json:"effects"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
		g.t.Fatal(err)
	}
	out := map[string]int{}
	for _, e := range l.Data {
		out[e.IdempotencyKey] += e.Effects
	}
	return out
}

const visa = `{"amount":1000,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer"}`

// eventually polls cond until it returns nil, and fails the test with cond's last error when
// timeout passes first. It waits on the condition, never for a fixed time: the test goes on
// as soon as what it waits for has happened.
func eventually(t testing.TB, timeout time.Duration, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %v", timeout, err)
		}
		<-tick.C
	}
}

// dbNow is the database's clock.
func dbNow(t testing.TB, conn *pgx.Conn) time.Time {
	t.Helper()
	var now time.Time
	if err := conn.QueryRow(context.Background(), `SELECT now()`).Scan(&now); err != nil {
		t.Fatal(err)
	}
	return now
}

// sweptSince waits until a periodic sweep of kind sweep that started after since (database
// clock) has completed, and no job of kind work waits or runs: what that sweep found due has
// been enqueued and has run. A test that asserts that nothing more happens asserts it then.
func sweptSince(t testing.TB, conn *pgx.Conn, since time.Time, sweep, work string) {
	t.Helper()
	eventually(t, 30*time.Second, func() error {
		var swept, busy bool
		if err := conn.QueryRow(context.Background(), `
			SELECT EXISTS (SELECT 1 FROM river_job WHERE kind = $1 AND state = 'completed' AND attempted_at > $2),
			       EXISTS (SELECT 1 FROM river_job WHERE kind = $3
			                 AND (state IN ('available', 'pending', 'running', 'retryable')
			                      OR state = 'scheduled' AND scheduled_at <= now()))`,
			sweep, since, work).Scan(&swept, &busy); err != nil {
			return err
		}
		if !swept || busy {
			return fmt.Errorf("%s since %s: swept %v; %s jobs waiting or running: %v", sweep, since, swept, work, busy)
		}
		return nil
	})
}

// logCount counts the lines of the gateway's log that hold every one of subs.
func (g *gateway) logCount(subs ...string) int {
	n := 0
	for line := range strings.SplitSeq(g.logs.String(), "\n") {
		all := true
		for _, s := range subs {
			all = all && strings.Contains(line, s)
		}
		if all {
			n++
		}
	}
	return n
}

// effectLands waits until the processor holds the effect of the charge with id (a delayed
// request takes effect later, whatever the gateway does meanwhile).
func (g *gateway) effectLands(id string) {
	g.t.Helper()
	eventually(g.t, 20*time.Second, func() error {
		if n := g.ledger()["pg_"+id]; n != 1 {
			return fmt.Errorf("effects under pg_%s: %d, want 1", id, n)
		}
		return nil
	})
}
