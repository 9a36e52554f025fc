package jobs

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/riverqueue/river"
)

type stuckReadArgs struct {
	Key string `json:"key"`
}

func (stuckReadArgs) Kind() string { return "test_stuck_read" }

type stuckWriteArgs struct {
	Key string `json:"key"`
}

func (stuckWriteArgs) Kind() string { return "test_stuck_write" }

// A replica dies (here: freezes, never finishing or reporting) while running two jobs.
// Once their timeout and the rescue delay pass, the leader on another replica takes them
// for stuck: the read runs again there, so it is not lost; the write is not run again by
// River but becomes a dead letter, for a guarded replay.
func TestStuckJobsAreRescued(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	other := openPool(t, pool.Config().ConnString())
	runs := newCounter()
	release := make(chan struct{})
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	running := make(chan string, 2)

	// frozen says whether this replica's workers hang.
	replica := func(frozen bool) *Registry {
		reg := NewRegistry()
		mustAdd(t, reg, Retryable(3), func(_ context.Context, job *river.Job[stuckReadArgs]) error {
			runs.inc("read")
			if frozen {
				running <- "read"
				<-release // ignores its context, like a process that stopped answering
			}
			return nil
		})
		mustAdd(t, reg, WriteOnce(), func(_ context.Context, job *river.Job[stuckWriteArgs]) error {
			runs.inc("write")
			if frozen {
				running <- "write"
				<-release
			}
			return nil
		})
		return reg
	}
	cfg := testConfig()
	cfg.JobTimeout = 200 * time.Millisecond
	cfg.RescueStuckJobsAfter = 500 * time.Millisecond

	// The replica that dies never leads, so the rescue is the survivor's.
	dying := cfg
	dying.leaderElectionDisabled = true
	dyingQ := newQueue(t, pool, replica(true), dying)
	if err := dyingQ.Start(ctx); err != nil {
		t.Fatal(err)
	}
	read, err := dyingQ.Insert(ctx, stuckReadArgs{Key: "r"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	write, err := dyingQ.Insert(ctx, stuckWriteArgs{Key: "w"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		select {
		case <-running:
		case <-time.After(10 * time.Second):
			t.Fatal("jobs did not start on the dying replica")
		}
	}
	// The replica dies: it fetches nothing more, and its hung jobs never report. A stop
	// whose bound passes at once leaves it exactly so.
	stopCtx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := dyingQ.Stop(stopCtx); err == nil {
		t.Fatal("Stop with hung jobs: got nil error, want the bound's")
	}
	waitFor(t, 5*time.Second, "both jobs to be past the rescue delay", func() bool {
		var stuck int
		_ = pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state = 'running' AND attempted_at < now() - interval '700 milliseconds'`).Scan(&stuck)
		return stuck == 2
	})

	survivor := startQueue(t, other, replica(false), cfg)
	waitState(t, pool, read.ID, "completed", 15*time.Second)
	waitState(t, pool, write.ID, "discarded", 5*time.Second)

	// The dying replica's hung workers finally return: their late answer changes nothing.
	close(release)
	select {
	case <-dyingQ.Client().Stopped():
	case <-time.After(5 * time.Second):
		t.Fatal("the dying replica did not finish stopping")
	}
	if got := jobState(t, pool, write.ID); got != "discarded" {
		t.Fatalf("write job after the late answer: got %s, want discarded", got)
	}
	if got, want := runs.get("read"), 2; got != want {
		t.Errorf("read job runs: got %d, want %d (the lost one, then the rescue)", got, want)
	}
	if got, want := runs.get("write"), 1; got != want {
		t.Errorf("write job runs: got %d, want %d", got, want)
	}
	dead, _, err := survivor.Dead(ctx, DeadParams{})
	if err != nil {
		t.Fatal(err)
	}
	if len(dead) != 1 || dead[0].ID != write.ID || len(dead[0].Errors) != 1 || !strings.Contains(dead[0].Errors[0].Error, "Stuck job rescued") {
		t.Fatalf("dead letters: got %+v, want the write job with the rescuer's error", dead)
	}
}
