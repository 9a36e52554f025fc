package jobs

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/riverqueue/river"
	"go.uber.org/zap"
)

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	reg := NewRegistry()
	if _, err := New(nil, zap.NewNop(), reg, Config{}); err == nil {
		t.Fatal("New with an empty registry: got nil error, want one")
	}
	mustAdd(t, reg, Retryable(1), func(context.Context, *river.Job[echoArgs]) error { return nil })
	_, err := New(nil, zap.NewNop(), reg, Config{JobTimeout: time.Minute, RescueStuckJobsAfter: time.Minute})
	if err == nil {
		t.Fatal("New with RescueStuckJobsAfter = JobTimeout: got nil error, want one")
	}
}

func TestRegistryPolicies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		pol  Policy
		ok   bool
	}{
		{"write once", WriteOnce(), true},
		{"write with retries", Policy{Writes: true, MaxAttempts: 3}, false},
		{"retryable", Retryable(5), true},
		{"retryable in reconcile", Retryable(5).InQueue(QueueReconcile), true},
		{"no attempts", Retryable(0), false},
		{"too many attempts", Retryable(MaxRetryableAttempts + 1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := Add(NewRegistry(), river.WorkFunc(func(context.Context, *river.Job[writeArgs]) error { return nil }), tt.pol)
			if got := err == nil; got != tt.ok {
				t.Fatalf("Add: got error %v, want ok=%v", err, tt.ok)
			}
			if !tt.ok && !errors.Is(err, ErrPolicy) {
				t.Fatalf("Add: got %v, want ErrPolicy", err)
			}
		})
	}

	reg := NewRegistry()
	mustAdd(t, reg, WriteOnce(), func(context.Context, *river.Job[writeArgs]) error { return nil })
	if err := Add(reg, river.WorkFunc(func(context.Context, *river.Job[writeArgs]) error { return nil }), WriteOnce()); err == nil {
		t.Fatal("Add twice: got nil error, want one")
	}
	if err := reg.Every(time.Minute, echoArgs{}, false); err == nil {
		t.Fatal("Every for an unregistered kind: got nil error, want one")
	}
	if err := reg.Every(time.Millisecond, writeArgs{}, false); err == nil {
		t.Fatal("Every below a second: got nil error, want one")
	}
}

// Two replicas on one database: every job runs exactly once.
func TestJobRunsOnceAcrossReplicas(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	other := openPool(t, pool.Config().ConnString())

	runs := newCounter()
	replica := func() *Registry {
		reg := NewRegistry()
		mustAdd(t, reg, Retryable(3), func(_ context.Context, job *river.Job[echoArgs]) error {
			runs.inc(job.Args.Key)
			return nil
		})
		return reg
	}
	q1 := startQueue(t, pool, replica(), testConfig())
	startQueue(t, other, replica(), testConfig())

	const n = 40
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := q1.InsertTx(ctx, tx, echoArgs{Key: fmt.Sprint(i)}, nil); err != nil {
			t.Fatalf("InsertTx: %v", err)
		}
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 15*time.Second, "every job to complete", func() bool {
		var done int
		_ = pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE kind = 'test_echo' AND state = 'completed'`).Scan(&done)
		return done == n
	})
	for i := range n {
		if got := runs.get(fmt.Sprint(i)); got != 1 {
			t.Errorf("job %d ran %d times, want 1", i, got)
		}
	}
}

func TestInsertTxIsAtomic(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	runs := newCounter()
	reg := NewRegistry()
	mustAdd(t, reg, Retryable(3), func(_ context.Context, job *river.Job[echoArgs]) error {
		runs.inc(job.Args.Key)
		return nil
	})
	q := startQueue(t, pool, reg, testConfig())

	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rolledBack, err := q.InsertTx(ctx, tx, echoArgs{Key: "rolled-back"}, nil)
	if err != nil {
		t.Fatalf("InsertTx: %v", err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}

	tx, err = pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := q.InsertTx(ctx, tx, echoArgs{Key: "committed"}, nil)
	if err != nil {
		t.Fatalf("InsertTx: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	waitState(t, pool, committed.ID, "completed", 10*time.Second)

	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE id = $1`, rolledBack.ID).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 || runs.get("rolled-back") != 0 {
		t.Fatalf("rolled-back job: got %d rows and %d runs, want 0 and 0", n, runs.get("rolled-back"))
	}
	if got := runs.get("committed"); got != 1 {
		t.Fatalf("committed job ran %d times, want 1", got)
	}
}

func TestInsertPolicyAndUniqueness(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	reg := NewRegistry()
	mustAdd(t, reg, WriteOnce(), func(context.Context, *river.Job[writeArgs]) error { return nil })
	mustAdd(t, reg, Retryable(7).InQueue(QueueReconcile), func(context.Context, *river.Job[echoArgs]) error { return nil })
	q := newQueue(t, pool, reg, testConfig()) // insert only: nothing runs
	later := time.Now().Add(time.Hour)

	if _, err := q.Insert(ctx, writeArgs{ChargeID: "ch_1"}, &river.InsertOpts{MaxAttempts: 3}); !errors.Is(err, ErrPolicy) {
		t.Fatalf("write job with 3 attempts: got %v, want ErrPolicy", err)
	}
	if _, err := q.Insert(ctx, unknownArgs{}, nil); !errors.Is(err, ErrPolicy) {
		t.Fatalf("unregistered kind: got %v, want ErrPolicy", err)
	}

	unique := &river.InsertOpts{UniqueOpts: UniquePerArgs(), ScheduledAt: later}
	first, err := q.Insert(ctx, writeArgs{ChargeID: "ch_1", Note: "a"}, unique)
	if err != nil || first.Duplicate {
		t.Fatalf("first insert: got %+v, %v, want a new job", first, err)
	}
	// Same charge, other fields: the live job holds the key.
	dup, err := q.Insert(ctx, writeArgs{ChargeID: "ch_1", Note: "b"}, unique)
	if err != nil || !dup.Duplicate || dup.ID != first.ID {
		t.Fatalf("same charge: got %+v, %v, want duplicate of %d", dup, err, first.ID)
	}
	other, err := q.Insert(ctx, writeArgs{ChargeID: "ch_2"}, unique)
	if err != nil || other.Duplicate {
		t.Fatalf("other charge: got %+v, %v, want a new job", other, err)
	}

	// The policy's attempts and queue hold whatever the insert path, even the raw client.
	raw, err := q.Client().Insert(ctx, writeArgs{ChargeID: "ch_3"}, &river.InsertOpts{MaxAttempts: 5, ScheduledAt: later})
	if err != nil {
		t.Fatal(err)
	}
	read, err := q.Insert(ctx, echoArgs{Key: "r"}, &river.InsertOpts{ScheduledAt: later})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		id       int64
		attempts int
		queue    string
	}{{first.ID, 1, QueueDefault}, {raw.Job.ID, 1, QueueDefault}, {read.ID, 7, QueueReconcile}} {
		var (
			attempts int
			queue    string
			state    string
			at       time.Time
		)
		err := pool.QueryRow(ctx, `SELECT max_attempts, queue, state, scheduled_at FROM river_job WHERE id = $1`, c.id).
			Scan(&attempts, &queue, &state, &at)
		if err != nil {
			t.Fatal(err)
		}
		if attempts != c.attempts || queue != c.queue {
			t.Errorf("job %d: got %d attempts in %q, want %d in %q", c.id, attempts, queue, c.attempts, c.queue)
		}
		if state != "scheduled" || at.Sub(later).Abs() > time.Second {
			t.Errorf("job %d: got %s at %s, want scheduled at %s", c.id, state, at, later)
		}
	}
}

type unknownArgs struct{}

func (unknownArgs) Kind() string { return "test_unknown" }

// A scheduled job does not run before its time, and runs after it.
func TestScheduledJobRunsAtItsTime(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	var (
		mu    sync.Mutex
		ranAt time.Time
	)
	reg := NewRegistry()
	mustAdd(t, reg, Retryable(1), func(context.Context, *river.Job[echoArgs]) error {
		mu.Lock()
		ranAt = time.Now()
		mu.Unlock()
		return nil
	})
	q := startQueue(t, pool, reg, testConfig())
	at := time.Now().Add(time.Second)
	ins, err := q.Insert(ctx, echoArgs{Key: "later"}, &river.InsertOpts{ScheduledAt: at})
	if err != nil {
		t.Fatal(err)
	}
	waitState(t, pool, ins.ID, "completed", 15*time.Second)
	mu.Lock()
	defer mu.Unlock()
	if ranAt.Before(at) {
		t.Fatalf("job ran at %s, want not before %s", ranAt, at)
	}
}

// Stop waits for a running job to finish instead of abandoning it.
func TestStopIsGraceful(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	started := make(chan struct{})
	reg := NewRegistry()
	mustAdd(t, reg, Retryable(1), func(ctx context.Context, _ *river.Job[echoArgs]) error {
		close(started)
		select {
		case <-time.After(300 * time.Millisecond):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	q := newQueue(t, pool, reg, testConfig())
	if err := q.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ins, err := q.Insert(ctx, echoArgs{Key: "slow"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("job did not start")
	}
	stopCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := q.Stop(stopCtx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if got := jobState(t, pool, ins.ID); got != "completed" {
		t.Fatalf("job after Stop: got %s, want completed", got)
	}
	if err := q.Stop(stopCtx); err != nil {
		t.Fatalf("second Stop: got %v, want nil", err)
	}
}
