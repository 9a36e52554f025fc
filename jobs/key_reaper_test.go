package jobs

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
)

// The reaper runs when a replica starts leading, then every interval, on one replica only.
func TestKeyReaperRunsPeriodically(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := newPool(t)
	other := openPool(t, pool.Config().ConnString())
	var calls atomic.Int32
	replica := func() *Registry {
		reg := NewRegistry()
		err := AddKeyReaper(reg, zaptest.NewLogger(t), time.Second, func(context.Context) (int, error) {
			calls.Add(1)
			return 7, nil
		})
		if err != nil {
			t.Fatalf("AddKeyReaper: %v", err)
		}
		return reg
	}
	startQueue(t, pool, replica(), testConfig())
	startQueue(t, other, replica(), testConfig())

	var (
		runs   int
		output string
	)
	waitFor(t, 10*time.Second, "the reaper to run twice", func() bool {
		err := pool.QueryRow(ctx, `
			SELECT count(*), coalesce(max(metadata->>'output'), '')
			FROM river_job WHERE kind = 'reap_idempotency_keys' AND state = 'completed'`).Scan(&runs, &output)
		return err == nil && runs >= 2
	})
	// One run per period whichever replica leads: as many calls as completed jobs, give or
	// take the one running now.
	if c := int(calls.Load()); c != runs && c != runs+1 {
		t.Errorf("reaper calls: got %d, want %d or %d (one per job)", c, runs, runs+1)
	}
	if output != `{"deleted": 7}` {
		t.Errorf("reaper output: got %q, want {\"deleted\": 7}", output)
	}
}
