package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// cluster is a PostgreSQL cluster of one test's own, started with scripts/pg.sh, that the
// test may stop, restart in recovery and start again.
type cluster struct {
	t    *testing.T
	dir  string
	port string
	url  string
}

// startCluster starts a cluster in a directory of the test's own; it is stopped when the
// test ends. Without DATABASE_URL (the suite's own cluster) the test skips, as the database
// tests do, unless in CI.
func startCluster(t *testing.T) *cluster {
	t.Helper()
	if os.Getenv("DATABASE_URL") == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("DATABASE_URL is not set; in CI the database tests must run (use `make test`)")
		}
		t.Skip("DATABASE_URL is not set; run `make test`")
	}
	c := &cluster{t: t, dir: t.TempDir()}
	t.Cleanup(func() { _ = c.pgsh("stop", c.dir) })
	// A port can be taken between the look and the bind: try another one then.
	var err error
	for range 3 {
		c.port = freePort(t)
		if err = c.start(); err == nil {
			return c
		}
	}
	t.Fatalf("starting a cluster of the test's own: %v", err)
	return nil
}

func freePort(t *testing.T) string {
	t.Helper()
	_, port, err := net.SplitHostPort(freeAddr(t))
	if err != nil {
		t.Fatal(err)
	}
	return port
}

// start starts the cluster (in recovery, refusing every connection with SQLSTATE 57P03,
// while a standby.signal file is in its data directory) and records its URL.
func (c *cluster) start(extraSettings ...string) error {
	cmd := exec.Command(filepath.Join("..", "..", "scripts", "pg.sh"), "start", c.dir, c.port)
	cmd.Env = append(os.Environ(), "PAYGATE_PG_OPTIONS="+strings.Join(extraSettings, " "))
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return fmt.Errorf("pg.sh start: %v: %s", err, ee.Stderr)
		}
		return err
	}
	c.url = strings.TrimSpace(string(out))
	return nil
}

func (c *cluster) pgsh(args ...string) error {
	out, err := exec.Command(filepath.Join("..", "..", "scripts", "pg.sh"), args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("pg.sh %v: %v: %s", args, err, out)
	}
	return nil
}

// stop stops the cluster (a fast shutdown: every session is terminated).
func (c *cluster) stop() {
	c.t.Helper()
	if err := c.pgsh("stop", c.dir); err != nil {
		c.t.Fatal(err)
	}
}

// startInRecovery starts the cluster as a standby with no primary and hot standby off: it
// stays in recovery and answers every connection "the database system is not accepting
// connections" (57P03), as a database still starting up does, until it is started again
// normally.
func (c *cluster) startInRecovery() {
	c.t.Helper()
	if err := os.WriteFile(filepath.Join(c.dir, "pgdata", "standby.signal"), nil, 0o644); err != nil {
		c.t.Fatal(err)
	}
	if err := c.start("-c hot_standby=off"); err != nil {
		c.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := pgconn.Connect(ctx, c.url)
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "57P03" {
		c.t.Fatalf("connecting to the cluster in recovery: got %v, want SQLSTATE 57P03", err)
	}
}

// startNormally ends the recovery, if any, and starts the cluster.
func (c *cluster) startNormally() {
	c.t.Helper()
	c.stop()
	if err := os.Remove(filepath.Join(c.dir, "pgdata", "standby.signal")); err != nil && !errors.Is(err, os.ErrNotExist) {
		c.t.Fatal(err)
	}
	if err := c.start(); err != nil {
		c.t.Fatal(err)
	}
}

// TestDatabaseRestart: while PostgreSQL restarts under a running gateway whose keys are
// cached — stopped (connections refused), then starting up (57P03) — every route that needs
// the database answers 503 database_unavailable with Retry-After, never a 500, and a
// charge refused so left nothing behind: once the database is back, a retry under the same
// key is a new charge (no replay), charged once.
func TestDatabaseRestart(t *testing.T) {
	t.Parallel()
	pg := startCluster(t)
	g := startGateway(t, "DATABASE_URL", pg.url, "PAYGATE_RECONCILE_SCHEDULE", "1h")
	k := g.key("m_restart", "checkout")
	op := g.key("m_restart", "operator")
	// Both keys are authenticated, and so cached, before the database goes away.
	first := g.charge(k, "before-restart", visa)
	if first.status != 200 {
		t.Fatalf("charge before the restart: got %d %s", first.status, first.body)
	}
	if r := g.do(http.MethodGet, "/v1/review", op, nil, ""); r.status != 200 {
		t.Fatalf("review queue before the restart: got %d %s", r.status, r.body)
	}
	path := "/v1/charges/" + first.json(t)["id"].(string)

	unavailable := func(what string, r reply) {
		t.Helper()
		if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") == "" {
			t.Fatalf("%s: got %d (Retry-After %q) %s, want 503 with Retry-After", what, r.status, r.header.Get("Retry-After"), r.body)
		}
		if code := r.json(t)["error"].(map[string]any)["code"]; code != "database_unavailable" {
			t.Fatalf("%s: got code %v, want database_unavailable", what, code)
		}
	}
	pg.stop()
	unavailable("charge while the database is down", g.charge(k, "during-stop", visa))
	unavailable("charge lookup while the database is down", g.do(http.MethodGet, path, k, nil, ""))
	unavailable("review queue while the database is down", g.do(http.MethodGet, "/v1/review", op, nil, ""))
	unavailable("dead letters while the database is down", g.do(http.MethodGet, "/v1/jobs/dead", op, nil, ""))

	pg.startInRecovery()
	unavailable("charge while the database starts up", g.charge(k, "during-startup", visa))
	unavailable("resolve while the database starts up", g.do(http.MethodPost, path+"/resolve", op, nil, `{"outcome":"failed","note":"x"}`))
	if logs := g.logs.String(); !strings.Contains(logs, "57P03") || !strings.Contains(logs, "charge: begin") {
		t.Fatalf("the log does not show the charge's first transaction meeting SQLSTATE 57P03:\n%s", logs)
	}

	pg.startNormally()
	// The gateway's pool reconnects on its own: wait for it to say it is ready.
	eventually(t, 20*time.Second, func() error {
		if r := g.do(http.MethodGet, "/readyz", "", nil, ""); r.status != 200 {
			return fmt.Errorf("the gateway is not ready after the database came back: %d %s", r.status, r.body)
		}
		return nil
	})
	for _, idem := range []string{"during-stop", "during-startup"} {
		r := g.charge(k, idem, visa)
		if r.status != 200 || r.header.Get("Idempotent-Replayed") != "" {
			t.Fatalf("retry of %s once the database is back: got %d (replayed %q) %s, want a new charge, 200",
				idem, r.status, r.header.Get("Idempotent-Replayed"), r.body)
		}
	}
	// Nothing half written: three charges, each with its one key, charged once each.
	conn, err := pgx.Connect(context.Background(), pg.url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var charges, keys int
	if err := conn.QueryRow(context.Background(), `SELECT (SELECT count(*) FROM charges), (SELECT count(*) FROM idempotency_keys)`).
		Scan(&charges, &keys); err != nil {
		t.Fatal(err)
	}
	if charges != 3 || keys != 3 {
		t.Fatalf("after the restart: %d charges and %d keys, want 3 of each", charges, keys)
	}
	for pk, n := range g.ledger() {
		if n != 1 {
			t.Fatalf("processor key %s: %d effects, want 1", pk, n)
		}
	}
}
