package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
)

// deadBundle is a started queue whose write job fails while failing is set.
type deadBundle struct {
	pool    *pgxpool.Pool
	q       *Queue
	runs    *counter
	failing atomic.Bool
}

func setupDead(t *testing.T, guard ReplayGuard) *deadBundle {
	t.Helper()
	b := &deadBundle{pool: newPool(t), runs: newCounter()}
	b.failing.Store(true)
	reg := NewRegistry()
	mustAdd(t, reg, WriteOnce(), func(_ context.Context, job *river.Job[writeArgs]) error {
		b.runs.inc(job.Args.ChargeID)
		if b.failing.Load() {
			return errors.New("processor said no")
		}
		return nil
	})
	mustAdd(t, reg, Retryable(1), func(_ context.Context, job *river.Job[echoArgs]) error {
		b.runs.inc(job.Args.Key)
		if b.failing.Load() {
			return errors.New("read failed")
		}
		return nil
	})
	cfg := testConfig()
	cfg.ReplayGuard = guard
	b.q = startQueue(t, b.pool, reg, cfg)
	return b
}

// kill inserts a job and waits until it is a dead letter.
func (b *deadBundle) kill(t *testing.T, args river.JobArgs, opts *river.InsertOpts) int64 {
	t.Helper()
	ins, err := b.q.Insert(context.Background(), args, opts)
	if err != nil {
		t.Fatalf("Insert: %v", err)
	}
	waitState(t, b.pool, ins.ID, "discarded", 10*time.Second)
	return ins.ID
}

func TestDeadLetters(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupDead(t, nil)
	reg := prometheus.NewRegistry()
	if err := b.q.RegisterMetrics(reg); err != nil {
		t.Fatalf("RegisterMetrics: %v", err)
	}
	if got := deadGauge(t, reg); got != 0 {
		t.Fatalf("paygate_jobs_dead before any failure: got %v, want 0", got)
	}

	opts, err := ForMerchant(nil, "m_1")
	if err != nil {
		t.Fatal(err)
	}
	first := b.kill(t, writeArgs{ChargeID: "ch_1"}, opts)
	second := b.kill(t, writeArgs{ChargeID: "ch_2"}, nil)
	third := b.kill(t, writeArgs{ChargeID: "ch_3"}, nil)

	// One attempt each: River never retried a write.
	for _, id := range []string{"ch_1", "ch_2", "ch_3"} {
		if got := b.runs.get(id); got != 1 {
			t.Errorf("write job %s ran %d times, want 1", id, got)
		}
	}

	page, next, err := b.q.Dead(ctx, DeadParams{Limit: 2})
	if err != nil {
		t.Fatalf("Dead: %v", err)
	}
	if got := ids(page); len(got) != 2 || got[0] != third || got[1] != second {
		t.Fatalf("first page: got ids %v, want [%d %d] (newest first)", got, third, second)
	}
	if next == "" {
		t.Fatal("first page: got no next cursor, want one")
	}
	d := page[1]
	if d.Kind != "test_write" || d.State != "discarded" || d.Attempts != 1 || d.MaxAttempts != 1 || d.FinalizedAt == nil {
		t.Errorf("dead letter: got %+v, want test_write discarded after 1 of 1 attempts", d)
	}
	var args writeArgs
	if err := json.Unmarshal(d.Args, &args); err != nil || args.ChargeID != "ch_2" {
		t.Errorf("dead letter args: got %s (%v), want charge ch_2", d.Args, err)
	}
	if len(d.Errors) != 1 || !strings.Contains(d.Errors[0].Error, "processor said no") || d.Errors[0].Attempt != 1 {
		t.Errorf("dead letter errors: got %+v, want attempt 1 with the worker's error", d.Errors)
	}

	page, next, err = b.q.Dead(ctx, DeadParams{Limit: 2, Cursor: next})
	if err != nil {
		t.Fatalf("Dead page 2: %v", err)
	}
	if got := ids(page); len(got) != 1 || got[0] != first || next != "" {
		t.Fatalf("second page: got ids %v and next %q, want [%d] and none", got, next, first)
	}
	if page[0].Merchant != "m_1" {
		t.Errorf("merchant: got %q, want m_1", page[0].Merchant)
	}

	page, _, err = b.q.Dead(ctx, DeadParams{Merchant: "m_1"})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(page); len(got) != 1 || got[0] != first {
		t.Fatalf("merchant m_1's dead letters: got %v, want [%d]", got, first)
	}
	if _, _, err := b.q.Dead(ctx, DeadParams{Cursor: "not a cursor"}); !errors.Is(err, ErrBadPage) {
		t.Fatalf("bad cursor: got %v, want ErrBadPage", err)
	}
	if _, _, err := b.q.Dead(ctx, DeadParams{Limit: MaxDeadLimit + 1}); !errors.Is(err, ErrBadPage) {
		t.Fatalf("limit above the maximum: got %v, want ErrBadPage", err)
	}
	if got := deadGauge(t, reg); got != 3 {
		t.Fatalf("paygate_jobs_dead: got %v, want 3", got)
	}
}

func TestReplay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var (
		mu     sync.Mutex
		guards []string
	)
	b := setupDead(t, func(_ context.Context, kind string, raw json.RawMessage) error {
		var args writeArgs
		if err := json.Unmarshal(raw, &args); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		guards = append(guards, kind+" "+args.ChargeID)
		return nil
	})
	opts, err := ForMerchant(nil, "m_1")
	if err != nil {
		t.Fatal(err)
	}
	id := b.kill(t, writeArgs{ChargeID: "ch_1"}, opts)
	b.failing.Store(false)

	if _, err := b.q.Replay(ctx, id, ReplayParams{By: "op_2", Merchant: "m_2"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("replay of another merchant's job: got %v, want ErrNotFound", err)
	}
	got, err := b.q.Replay(ctx, id, ReplayParams{By: "op_1", Merchant: "m_1"})
	if err != nil {
		t.Fatalf("Replay: %v", err)
	}
	if got.State != "available" || len(got.Replays) != 1 || got.Replays[0].By != "op_1" || got.Replays[0].Attempt != 1 {
		t.Fatalf("replayed job: got state %s and replays %+v, want available with one replay by op_1 after attempt 1", got.State, got.Replays)
	}
	mu.Lock()
	if len(guards) != 1 || guards[0] != "test_write ch_1" {
		t.Errorf("guard calls: got %q, want one for the job's kind and args", guards)
	}
	mu.Unlock()

	waitState(t, b.pool, id, "completed", 10*time.Second)
	if n := b.runs.get("ch_1"); n != 2 {
		t.Fatalf("runs after one replay: got %d, want 2", n)
	}
	if _, err := b.q.Replay(ctx, id, ReplayParams{By: "op_1"}); !errors.Is(err, ErrNotDead) {
		t.Fatalf("replay of a completed job: got %v, want ErrNotDead", err)
	}
	if _, err := b.q.Replay(ctx, id+1000, ReplayParams{By: "op_1"}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("replay of an unknown job: got %v, want ErrNotFound", err)
	}
	if n := b.runs.get("ch_1"); n != 2 {
		t.Fatalf("runs at the end: got %d, want 2", n)
	}
}

// Two operators replaying one dead letter at once: it runs again once.
func TestReplayRaceRunsOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupDead(t, func(context.Context, string, json.RawMessage) error { return nil })
	id := b.kill(t, writeArgs{ChargeID: "ch_1"}, nil)
	b.failing.Store(false)

	const operators = 4
	errs := make([]error, operators)
	var wg sync.WaitGroup
	for i := range operators {
		wg.Go(func() { _, errs[i] = b.q.Replay(ctx, id, ReplayParams{By: "op"}) })
	}
	wg.Wait()
	var ok, notDead int
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errors.Is(err, ErrNotDead):
			notDead++
		default:
			t.Errorf("Replay: got %v, want nil or ErrNotDead", err)
		}
	}
	if ok != 1 || notDead != operators-1 {
		t.Fatalf("concurrent replays: got %d accepted and %d ErrNotDead, want 1 and %d", ok, notDead, operators-1)
	}
	waitState(t, b.pool, id, "completed", 10*time.Second)
	if n := b.runs.get("ch_1"); n != 2 {
		t.Fatalf("runs: got %d, want 2", n)
	}
}

var errRuleClosed = errors.New("24 h rule closed for this key")

func TestReplayRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	t.Run("by the guard", func(t *testing.T) {
		t.Parallel()
		b := setupDead(t, func(context.Context, string, json.RawMessage) error { return errRuleClosed })
		id := b.kill(t, writeArgs{ChargeID: "ch_1"}, nil)
		_, err := b.q.Replay(ctx, id, ReplayParams{By: "op_1"})
		var refused *ReplayRefusedError
		if !errors.Is(err, ErrReplayRefused) || !errors.Is(err, errRuleClosed) || !errors.As(err, &refused) || refused.Kind != "test_write" {
			t.Fatalf("Replay: got %v, want a ReplayRefusedError for test_write wrapping the guard's error", err)
		}
		if got := jobState(t, b.pool, id); got != "discarded" {
			t.Fatalf("refused job: got %s, want discarded", got)
		}
		if n := b.runs.get("ch_1"); n != 1 {
			t.Fatalf("runs: got %d, want 1", n)
		}
	})

	t.Run("write without a guard", func(t *testing.T) {
		t.Parallel()
		b := setupDead(t, nil)
		id := b.kill(t, writeArgs{ChargeID: "ch_1"}, nil)
		if _, err := b.q.Replay(ctx, id, ReplayParams{By: "op_1"}); !errors.Is(err, ErrReplayRefused) {
			t.Fatalf("Replay of a write without a guard: got %v, want ErrReplayRefused", err)
		}
		// A read is replayed without a guard.
		read := b.kill(t, echoArgs{Key: "r"}, nil)
		b.failing.Store(false)
		if _, err := b.q.Replay(ctx, read, ReplayParams{By: "op_1"}); err != nil {
			t.Fatalf("Replay of a read: got %v, want nil", err)
		}
		waitState(t, b.pool, read, "completed", 10*time.Second)
	})

	t.Run("live job", func(t *testing.T) {
		t.Parallel()
		b := setupDead(t, func(context.Context, string, json.RawMessage) error { return nil })
		ins, err := b.q.Insert(ctx, writeArgs{ChargeID: "ch_1"}, &river.InsertOpts{ScheduledAt: time.Now().Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.q.Replay(ctx, ins.ID, ReplayParams{By: "op_1"}); !errors.Is(err, ErrNotDead) {
			t.Fatalf("Replay of a scheduled job: got %v, want ErrNotDead", err)
		}
	})

	t.Run("live duplicate", func(t *testing.T) {
		t.Parallel()
		b := setupDead(t, func(context.Context, string, json.RawMessage) error { return nil })
		unique := &river.InsertOpts{UniqueOpts: UniquePerArgs()}
		id := b.kill(t, writeArgs{ChargeID: "ch_1"}, unique)
		// A dead job does not hold its key: a new job for the same charge is accepted.
		unique.ScheduledAt = time.Now().Add(time.Hour)
		live, err := b.q.Insert(ctx, writeArgs{ChargeID: "ch_1"}, unique)
		if err != nil || live.Duplicate {
			t.Fatalf("new job for a dead charge: got %+v, %v, want a new job", live, err)
		}
		if _, err := b.q.Replay(ctx, id, ReplayParams{By: "op_1"}); !errors.Is(err, ErrDuplicate) {
			t.Fatalf("Replay with a live job for the same charge: got %v, want ErrDuplicate", err)
		}
		if got := jobState(t, b.pool, id); got != "discarded" {
			t.Fatalf("refused job: got %s, want discarded", got)
		}
	})
}

func ids(page []DeadJob) []int64 {
	out := make([]int64, 0, len(page))
	for _, d := range page {
		out = append(out, d.ID)
	}
	return out
}

func deadGauge(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "paygate_jobs_dead" {
			return mf.GetMetric()[0].GetGauge().GetValue()
		}
	}
	t.Fatal("paygate_jobs_dead not gathered")
	return 0
}
