package jobs

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"go.uber.org/zap/zaptest"

	"github.com/paygate/paygate/internal/dbtest"
)

func TestMain(m *testing.M) { dbtest.Main(m) }

// Test job kinds. echoArgs is a read (Retryable); writeArgs stands for a job that writes
// to the processor (WriteOnce), unique per charge.
type echoArgs struct {
	Key string `json:"key"`
}

func (echoArgs) Kind() string { return "test_echo" }

type writeArgs struct {
	ChargeID string `json:"charge_id" river:"unique"`
	Note     string `json:"note,omitempty"`
}

func (writeArgs) Kind() string { return "test_write" }

// counter counts runs per key, across every replica of a test.
type counter struct {
	mu sync.Mutex
	n  map[string]int
}

func newCounter() *counter { return &counter{n: map[string]int{}} }

func (c *counter) inc(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n[key]++
	return c.n[key]
}

func (c *counter) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[key]
}

// newPool returns a pool on a fresh database of the test's own, with River's tables.
func newPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	url := dbtest.NewDatabase(t)
	pool := openPool(t, url)
	if err := Migrate(context.Background(), pool); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return pool
}

// openPool opens another pool on the database at url: each pool stands for one replica.
func openPool(t *testing.T, url string) *pgxpool.Pool {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatalf("pgxpool.New: %v", err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// testConfig is a Config with short timeouts and River's start-up jitter off.
func testConfig() Config {
	return Config{JobTimeout: 5 * time.Second, StopTimeout: 2 * time.Second, testOnly: true}
}

// newQueue builds a queue that is not started (insert only).
func newQueue(t *testing.T, pool *pgxpool.Pool, reg *Registry, cfg Config) *Queue {
	t.Helper()
	q, err := New(pool, zaptest.NewLogger(t), reg, cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return q
}

// startQueue builds and starts a queue, stopped when the test ends.
func startQueue(t *testing.T, pool *pgxpool.Pool, reg *Registry, cfg Config) *Queue {
	t.Helper()
	q := newQueue(t, pool, reg, cfg)
	if err := q.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := q.Stop(ctx); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return q
}

// mustAdd registers a worker function for kind T.
func mustAdd[T river.JobArgs](t *testing.T, reg *Registry, p Policy, fn func(context.Context, *river.Job[T]) error) {
	t.Helper()
	if err := Add(reg, river.WorkFunc(fn), p); err != nil {
		t.Fatalf("Add: %v", err)
	}
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// jobState reads a job's state straight from River's table.
func jobState(t *testing.T, pool *pgxpool.Pool, id int64) string {
	t.Helper()
	var s string
	if err := pool.QueryRow(context.Background(), `SELECT state FROM river_job WHERE id = $1`, id).Scan(&s); err != nil {
		t.Fatalf("job %d state: %v", id, err)
	}
	return s
}

// waitState waits until job id is in state want.
func waitState(t *testing.T, pool *pgxpool.Pool, id int64, want string, timeout time.Duration) {
	t.Helper()
	waitFor(t, timeout, "job to be "+want, func() bool { return jobState(t, pool, id) == want })
}
