package jobs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"go.uber.org/zap"
)

// KeyReaperAttempts is the River attempts of one run of the key reaper: deleting expired
// keys is idempotent, so a failed run is retried.
const KeyReaperAttempts = 3

// KeyReaperArgs are the (empty) arguments of the periodic job that deletes inbound
// idempotency keys past their retention.
type KeyReaperArgs struct{}

// Kind returns the job kind of the key reaper.
func (KeyReaperArgs) Kind() string { return "reap_idempotency_keys" }

// ReapFunc deletes what is past its retention and returns how many rows it deleted.
type ReapFunc func(ctx context.Context) (int, error)

type keyReaper struct {
	river.WorkerDefaults[KeyReaperArgs]
	reap ReapFunc
	log  *zap.Logger
}

func (w *keyReaper) Work(ctx context.Context, job *river.Job[KeyReaperArgs]) error {
	n, err := w.reap(ctx)
	if err != nil {
		return fmt.Errorf("reap idempotency keys: %w", err)
	}
	w.log.Info("reaped idempotency keys", zap.Int("deleted", n), zap.Int64("job_id", job.ID))
	// The count is kept on the job row while River keeps completed jobs.
	_ = river.RecordOutput(ctx, map[string]int{"deleted": n})
	return nil
}

// AddKeyReaper registers the key reaper: every interval, and once when a replica becomes
// the leader, one replica runs reap (the store's deletion of inbound idempotency keys past
// their retention). It is Retryable with KeyReaperAttempts attempts, in the default queue.
func AddKeyReaper(r *Registry, log *zap.Logger, every time.Duration, reap ReapFunc) error {
	if reap == nil {
		return errors.New("jobs: key reaper: no reap function")
	}
	if log == nil {
		log = zap.NewNop()
	}
	if err := Add(r, &keyReaper{reap: reap, log: log}, Retryable(KeyReaperAttempts)); err != nil {
		return err
	}
	return r.Every(every, KeyReaperArgs{}, true)
}
