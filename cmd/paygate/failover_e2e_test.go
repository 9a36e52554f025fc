package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// standbyPair is a PostgreSQL primary with a synchronous hot standby, started by
// scripts/pg-standby.sh for one test.
type standbyPair struct {
	t       *testing.T
	dir     string
	url     string // both hosts, target_session_attrs=read-write
	readURL string // the standby first, target_session_attrs=prefer-standby
}

// startStandbyPair starts a pair on two free ports, stopped when the test ends. Without
// DATABASE_URL (no PostgreSQL for the tests) the test is skipped, except in CI.
func startStandbyPair(t *testing.T) *standbyPair {
	t.Helper()
	if os.Getenv("DATABASE_URL") == "" && os.Getenv("CI") != "true" {
		t.Skip("no PostgreSQL for the tests (DATABASE_URL unset)")
	}
	script, err := filepath.Abs(filepath.Join("..", "..", "scripts", "pg-standby.sh"))
	if err != nil {
		t.Fatal(err)
	}
	p := &standbyPair{t: t, dir: t.TempDir()}
	port := func() string { _, port, _ := strings.Cut(freeAddr(t), ":"); return port }
	out, err := exec.Command(script, "start", p.dir, port(), port()).CombinedOutput()
	t.Cleanup(func() {
		if b, err := exec.Command(script, "stop", p.dir).CombinedOutput(); err != nil {
			t.Errorf("pg-standby.sh stop: %v: %s", err, b)
		}
	})
	if err != nil {
		t.Fatalf("pg-standby.sh start: %v: %s", err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "DATABASE_URL="); ok {
			p.url = v
		}
		if v, ok := strings.CutPrefix(line, "PAYGATE_READ_DATABASE_URL="); ok {
			p.readURL = v
		}
	}
	if p.url == "" || p.readURL == "" {
		t.Fatalf("pg-standby.sh start printed no URLs: %s", out)
	}
	return p
}

// failover stops the primary with -m immediate and promotes the standby; it returns how
// long the primary took to stop.
func (p *standbyPair) failover() (time.Duration, error) {
	out, err := exec.Command(filepath.Join("..", "..", "scripts", "pg-standby.sh"), "failover", p.dir).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("pg-standby.sh failover: %v: %s", err, out)
	}
	var stopMS, promoteMS int
	if _, err := fmt.Sscanf(string(out), "primary stopped (immediate) in %d ms; standby promoted in %d ms", &stopMS, &promoteMS); err != nil {
		return 0, fmt.Errorf("pg-standby.sh failover printed %q: %v", out, err)
	}
	return time.Duration(stopMS) * time.Millisecond, nil
}

// failoverCharge is what a checkout client saw of one charge it sent through the failover.
type failoverCharge struct {
	key      string
	id       string // the charge's id, once answered
	status   int    // the final answer's status
	state    string // the final answer's charge status
	ackedAt  time.Time
	answers  map[string]int // every answer: "503 database_unavailable", "200", ...
	problems []string
}

// TestFailover: 1 000 charges under load through a failover of the primary to its
// synchronous standby. While no primary accepts writes, requests are answered 503
// database_unavailable with Retry-After, never 500; the client retries them with the same
// Idempotency-Key, as checkouts do. Afterwards no processor key has two effects, every
// charge answered is on the new primary as it was answered, every effect at the processor
// has its charge, no charge is left mid-flight, and River reconciles a new unknown outcome:
// the gateway served on through it all.
func TestFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	t.Parallel()
	pair := startStandbyPair(t)
	bin := binary(t)
	simAddr := freeAddr(t)
	startProcess(t, bin, nil, "sim", "--addr", simAddr, "--account", "acct_failover")
	waitListening(t, simAddr)
	simBase := "http://" + simAddr
	env := map[string]string{"DATABASE_URL": pair.url}
	var out syncBuffer
	if code := Run(context.Background(), []string{"migrate"}, &out, &out, func(k string) string { return env[k] }); code != 0 {
		t.Fatalf("migrate: %s", out.String())
	}
	r := &killRig{t: t, bin: bin, dbURL: pair.url, simBase: simBase, env: []string{
		"DATABASE_URL=" + pair.url,
		"PAYGATE_READ_DATABASE_URL=" + pair.readURL,
		"PAYGATE_PROCESSOR=stripe",
		"STRIPE_SECRET_KEY=sk_test_failover",
		"STRIPE_API_BASE=" + simBase,
		"PAYGATE_COMPLETER_IDLE=500ms",
		"PAYGATE_COMPLETER_INTERVAL=300ms",
		"PAYGATE_KEY_LOCK_MARGIN=500ms",
		"PAYGATE_RECONCILE_SCHEDULE=1s,2s,3s,1h",
		"PAYGATE_RECONCILE_SWEEP=1s",
		"PAYGATE_LOG_LEVEL=warn",
	}}
	r.g = &gateway{t: t, simBase: simBase, env: env, logs: &syncBuffer{}}
	replicas := []*replica{r.startReplica(), r.startReplica()}
	k := r.g.key("m_failover", "checkout")
	operator := r.g.key("m_failover", "operator")
	// Each charge stays a while at the processor, so that some are there when the primary
	// stops.
	r.simFaults(`{"latency_ms": 20}`)

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}, Timeout: 30 * time.Second}
	send := func(c *failoverCharge, rp *replica) {
		body := `{"amount":1000,"currency":"usd","payment_method":"pm_card_visa","initiator":"customer"}`
		giveUp := time.Now().Add(60 * time.Second)
		for time.Now().Before(giveUp) {
			req, _ := http.NewRequest(http.MethodPost, rp.base+"/v1/charges", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+k)
			req.Header.Set("Idempotency-Key", c.key)
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				c.problems = append(c.problems, "no answer: "+err.Error())
				time.Sleep(200 * time.Millisecond)
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var v struct {
				ID     string `json:"id"`
				Status string `json:"status"`
				Error  struct {
					Code string `json:"code"`
				} `json:"error"`
			}
			_ = json.Unmarshal(b, &v)
			answer := strconv.Itoa(resp.StatusCode)
			if v.Error.Code != "" {
				answer += " " + v.Error.Code
			}
			c.answers[answer]++
			switch resp.StatusCode {
			case http.StatusOK, http.StatusAccepted, http.StatusPaymentRequired:
				c.id, c.status, c.state, c.ackedAt = v.ID, resp.StatusCode, v.Status, time.Now()
				return
			case http.StatusServiceUnavailable:
				wait, err := strconv.Atoi(resp.Header.Get("Retry-After"))
				if err != nil || wait < 0 {
					c.problems = append(c.problems, fmt.Sprintf("503 %s without a Retry-After of seconds: %q", v.Error.Code, resp.Header.Get("Retry-After")))
					wait = 1
				}
				time.Sleep(min(time.Duration(wait)*time.Second, time.Second))
			case http.StatusConflict: // idempotency_key_in_use: the first request still runs, or its lock
				time.Sleep(300 * time.Millisecond)
			default:
				c.problems = append(c.problems, fmt.Sprintf("HTTP %d: %s", resp.StatusCode, b))
				if resp.StatusCode >= 500 {
					time.Sleep(500 * time.Millisecond)
					continue
				}
				return
			}
		}
		c.problems = append(c.problems, "not answered within 60 s")
	}

	// Meanwhile an operator and a checkout read everything else, on both replicas.
	r.g.base = replicas[0].base
	known := r.g.charge(k, "failover-known", visa).json(t)["id"].(string)
	reads := []struct{ key, method, path string }{
		{k, http.MethodGet, "/v1/charges?limit=5"},
		{k, http.MethodGet, "/v1/charges/" + known},
		{operator, http.MethodGet, "/v1/review"},
		{operator, http.MethodGet, "/v1/reports/reattempts"},
		{operator, http.MethodGet, "/v1/jobs/dead"},
		{operator, http.MethodPost, "/v1/charges/" + known + "/reconcile"},
		{"", http.MethodGet, "/readyz"},
	}
	readAnswers := map[string]int{}
	stopReads, readsDone := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(readsDone)
		for i := 0; ; i++ {
			select {
			case <-stopReads:
				return
			case <-time.After(20 * time.Millisecond):
			}
			rd := reads[i%len(reads)]
			req, _ := http.NewRequest(rd.method, replicas[i%len(replicas)].base+rd.path, nil)
			if rd.key != "" {
				req.Header.Set("Authorization", "Bearer "+rd.key)
			}
			resp, err := client.Do(req)
			if err != nil {
				readAnswers[rd.method+" "+rd.path+": no answer"]++
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var v struct {
				Error struct {
					Code string `json:"code"`
				} `json:"error"`
			}
			_ = json.Unmarshal(b, &v)
			answer := fmt.Sprintf("%s %s: %d %s", rd.method, rd.path, resp.StatusCode, v.Error.Code)
			if resp.StatusCode == http.StatusServiceUnavailable && rd.key != "" && resp.Header.Get("Retry-After") == "" {
				answer += " without Retry-After"
			}
			readAnswers[strings.TrimSpace(answer)]++
		}
	}()

	const n = 1000
	charges := make([]*failoverCharge, n)
	var (
		wg             sync.WaitGroup
		mu             sync.Mutex
		acked          int
		killAt, doneAt time.Time
		stopTook       time.Duration
		failoverErr    error
		failedOver     = make(chan struct{})
	)
	start := time.Now()
	tick := time.NewTicker(10 * time.Millisecond) // 100 charges a second
	for i := range n {
		<-tick.C
		c := &failoverCharge{key: fmt.Sprintf("failover-%d", i), answers: map[string]int{}}
		charges[i] = c
		wg.Go(func() {
			send(c, replicas[i%len(replicas)])
			mu.Lock()
			defer mu.Unlock()
			if acked++; acked == 300 { // a third of the way: the primary stops
				go func() {
					defer close(failedOver)
					mu.Lock()
					killAt = time.Now()
					mu.Unlock()
					took, err := pair.failover()
					mu.Lock()
					doneAt, stopTook, failoverErr = time.Now(), took, err
					mu.Unlock()
				}()
			}
		})
	}
	tick.Stop()
	wg.Wait()
	<-failedOver
	close(stopReads)
	<-readsDone
	if failoverErr != nil {
		t.Fatal(failoverErr)
	}
	loadTook := time.Since(start)
	stoppedAt := killAt.Add(stopTook) // no write commits between this and the promotion

	// The client's view.
	answers := map[string]int{}
	var problems []string
	var lastBefore, firstAfter time.Time
	for _, c := range charges {
		for a, k := range c.answers {
			answers[a] += k
		}
		for _, p := range c.problems {
			problems = append(problems, c.key+": "+p)
		}
		if c.id == "" {
			continue
		}
		if c.ackedAt.Before(stoppedAt) && c.ackedAt.After(lastBefore) {
			lastBefore = c.ackedAt
		}
		if c.ackedAt.After(doneAt) && (firstAfter.IsZero() || c.ackedAt.Before(firstAfter)) {
			firstAfter = c.ackedAt
		}
	}
	sort.Strings(problems)
	for i, p := range problems {
		if i == 10 {
			t.Errorf("... and %d more", len(problems)-10)
			break
		}
		t.Error(p)
	}
	for a, k := range answers {
		if strings.HasPrefix(a, "500") {
			t.Errorf("%d answers %s during the failover, want none", k, a)
		}
	}
	for a, k := range readAnswers {
		if strings.Contains(a, ": 500") || strings.Contains(a, "no answer") || strings.Contains(a, "without Retry-After") {
			t.Errorf("%d × %s during the failover", k, a)
		}
	}

	// The new primary's view, once no charge is mid-flight any more.
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pair.url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var inRecovery bool
	if err := conn.QueryRow(ctx, `SELECT pg_is_in_recovery()`).Scan(&inRecovery); err != nil || inRecovery {
		t.Fatalf("the database paygate reaches is not the promoted primary (in recovery: %v, %v)", inRecovery, err)
	}
	if _, ok := waitFor(30*time.Second, func() bool {
		var mid int
		_ = conn.QueryRow(ctx, `SELECT count(*) FROM charges WHERE merchant_id = 'm_failover' AND status = 'processing'`).Scan(&mid)
		return mid == 0
	}); !ok {
		t.Error("charges are still processing 30 s after the load: the completer did not resume them")
	}
	states := map[string]string{}
	keys := map[string]string{}
	rows, err := conn.Query(ctx, `SELECT id, status, 'pg_' || id FROM charges WHERE merchant_id = 'm_failover'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id, status, key string
		if err := rows.Scan(&id, &status, &key); err != nil {
			t.Fatal(err)
		}
		states[id], keys[key] = status, id
	}
	rows.Close()
	byState := map[string]int{}
	missing := 0
	for _, c := range charges {
		if c.id == "" {
			continue
		}
		got, ok := states[c.id]
		byState[got]++
		switch {
		case !ok:
			missing++
			t.Errorf("charge %s (%s) was answered %d %s but is not on the new primary", c.id, c.key, c.status, c.state)
		case c.state != "pending" && got != c.state:
			t.Errorf("charge %s was answered %s but is %s on the new primary", c.id, c.state, got)
		case got == "processing":
			t.Errorf("charge %s is still processing", c.id)
		}
	}
	duplicates, orphans := 0, 0
	for key, effects := range r.g.ledger() {
		if effects > 1 {
			duplicates++
			t.Errorf("processor key %s: %d effects, want 1", key, effects)
		}
		if _, ok := keys[key]; !ok && effects > 0 {
			orphans++
			t.Errorf("processor key %s has an effect but no charge on the new primary", key)
		}
	}

	// The database's view of the gap: the last write the old primary committed before it
	// stopped (replicated synchronously, so it is here) and the first the new one did. A
	// charge's times are when its writes began.
	var lastOld, firstNew *time.Time
	if err := conn.QueryRow(ctx, `
		SELECT max(t) FILTER (WHERE t < $1), min(t) FILTER (WHERE t > $1)
		  FROM (SELECT created_at AS t FROM charges UNION ALL SELECT updated_at FROM charges) w`, stoppedAt).Scan(&lastOld, &firstNew); err != nil {
		t.Fatal(err)
	}
	gap := "unknown"
	if lastOld != nil && firstNew != nil {
		gap = firstNew.Sub(*lastOld).Round(time.Millisecond).String()
	}
	t.Logf("FIGURE failover: %d charges over 2 replicas in %v; the primary stopped (-m immediate, %v) after %d answers and the standby was promoted %v later; gap (last write on the old primary to the first on the new): %s; answers: the last before the stop %v before it, the first after the promotion %v after it",
		n, loadTook.Round(time.Millisecond), stopTook, 300, doneAt.Sub(stoppedAt).Round(time.Millisecond), gap,
		stoppedAt.Sub(lastBefore).Round(time.Millisecond), firstAfter.Sub(doneAt).Round(time.Millisecond))
	t.Logf("FIGURE failover: answers %v; charges by state on the new primary %v; %d missing, %d keys with two effects, %d effects without a charge",
		answers, byState, missing, duplicates, orphans)
	t.Logf("FIGURE failover: the other requests' answers %v", readAnswers)
	if answers["503 database_unavailable"] == 0 {
		t.Log("no request met the gap (the failover fell between requests)")
	}

	// Background work runs on the new primary: River reconciles an unknown outcome, the
	// read database serves the review queue, and every replica is still ready.
	r.g.script(`[{"status":500,"after_commit":true}]`)
	unknown := r.g.charge(k, "after-failover", visa)
	if unknown.status != http.StatusAccepted {
		t.Fatalf("a charge whose outcome is unknown after the failover: got %d %s, want 202", unknown.status, unknown.body)
	}
	id := unknown.json(t)["id"].(string)
	if _, ok := waitFor(20*time.Second, func() bool {
		return r.g.do(http.MethodGet, "/v1/charges/"+id, k, nil, "").json(t)["status"] == "succeeded"
	}); !ok {
		t.Errorf("charge %s was not reconciled after the failover: River did not resume", id)
	}
	if got := r.g.do(http.MethodGet, "/v1/review", operator, nil, ""); got.status != http.StatusOK {
		t.Errorf("review queue after the failover: got %d %s, want 200", got.status, got.body)
	}
	for i, rp := range replicas {
		resp, err := http.Get(rp.base + "/readyz")
		if err != nil {
			t.Errorf("replica %d after the failover: %v (it stopped serving)", i, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("replica %d after the failover: /readyz %d, want 200", i, resp.StatusCode)
		}
		if logs := rp.proc.logs.String(); strings.Contains(logs, "panic") {
			t.Errorf("replica %d panicked:\n%s", i, tail(logs, 40))
		}
	}
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	var lines []string
	sc := bufio.NewScanner(bytes.NewBufferString(s))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}
