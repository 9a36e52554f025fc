package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"go.uber.org/zap"
)

// ReplayGuard decides whether a dead letter may run again, given its kind and args. It
// returns nil to allow the replay and an error to refuse it; Replay returns the refusal as
// a *ReplayRefusedError wrapping the guard's error, so a typed reason (the 24 h rule closed
// for the charge's processor key, a network cap reached) reaches the API intact. It runs
// while the dead letter's row is locked, so keep it to a few reads.
type ReplayGuard func(ctx context.Context, kind string, args json.RawMessage) error

// ReplayParams qualifies a replay.
type ReplayParams struct {
	// By names who asks (an API key id, an operator); it is kept in the job's replay audit.
	By string
	// Merchant, when set, lets the replay through only for a job inserted for that
	// merchant (ForMerchant); any other job is ErrNotFound.
	Merchant string
}

// errNoGuard is the reason a job kind that writes is refused without a guard.
var errNoGuard = errors.New("the job writes to the processor and no replay guard is configured")

// Replay deliberately runs a dead letter again: once the guard allows it, River puts the
// same job back in its queue with one more attempt (its attempt errors stay on it), and a
// record of the replay (time on the database clock, who, the attempts made so far) is
// added to the job's metadata, all in one transaction. It returns the job as put back.
//
// Errors: ErrNotFound for an unknown id (or another merchant's job); an error wrapping
// ErrNotDead for a job that is not discarded (so a job is replayed at most once per death,
// even when operators race); a *ReplayRefusedError (errors.Is ErrReplayRefused) when the
// guard refuses, or when the kind writes to the processor (or is unknown to this binary)
// and no guard is configured; ErrDuplicate when a live job holds the same unique key.
func (q *Queue) Replay(ctx context.Context, id int64, p ReplayParams) (DeadJob, error) {
	tx, err := q.pool.Begin(ctx)
	if err != nil {
		return DeadJob{}, fmt.Errorf("jobs: replay: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // a no-op after Commit

	// The row lock makes concurrent replays of one job wait for each other; the second
	// then finds the job no longer discarded.
	var locked int64
	err = tx.QueryRow(ctx, `SELECT id FROM river_job WHERE id = $1 FOR UPDATE`, id).Scan(&locked)
	if errors.Is(err, pgx.ErrNoRows) {
		return DeadJob{}, ErrNotFound
	}
	if err != nil {
		return DeadJob{}, fmt.Errorf("jobs: replay: %w", err)
	}
	row, err := q.client.JobGetTx(ctx, tx, id)
	if isNotFound(err) {
		return DeadJob{}, ErrNotFound
	}
	if err != nil {
		return DeadJob{}, fmt.Errorf("jobs: replay: %w", err)
	}
	job := deadJob(row)
	if p.Merchant != "" && job.Merchant != p.Merchant {
		return DeadJob{}, ErrNotFound
	}
	if job.State != "discarded" {
		return DeadJob{}, fmt.Errorf("%w: job %d is %s", ErrNotDead, id, job.State)
	}
	pol, _ := q.policies.get(job.Kind)
	switch {
	case q.guard != nil:
		if err := q.guard(ctx, job.Kind, job.Args); err != nil {
			return DeadJob{}, &ReplayRefusedError{ID: id, Kind: job.Kind, Reason: err}
		}
	case pol.Writes:
		return DeadJob{}, &ReplayRefusedError{ID: id, Kind: job.Kind, Reason: errNoGuard}
	}

	if _, err := q.client.JobRetryTx(ctx, tx, id); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" {
			return DeadJob{}, fmt.Errorf("%w: job %d (%s)", ErrDuplicate, id, job.Kind)
		}
		return DeadJob{}, fmt.Errorf("jobs: replay: %w", err)
	}
	_, err = tx.Exec(ctx, `
		UPDATE river_job
		SET metadata = jsonb_set(metadata, ARRAY[$2::text],
			coalesce(metadata->$2::text, '[]'::jsonb) || jsonb_build_array(jsonb_build_object(
				'at', now(), 'by', $3::text, 'attempt', $4::int)))
		WHERE id = $1`, id, metaReplays, p.By, job.Attempts)
	if err != nil {
		return DeadJob{}, fmt.Errorf("jobs: replay: audit: %w", err)
	}
	row, err = q.client.JobGetTx(ctx, tx, id)
	if err != nil {
		return DeadJob{}, fmt.Errorf("jobs: replay: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return DeadJob{}, fmt.Errorf("jobs: replay: commit: %w", err)
	}
	q.log.Info("dead letter replayed",
		zap.Int64("job_id", id), zap.String("kind", job.Kind), zap.String("replayed_by", p.By),
		zap.Int("attempt", job.Attempts))
	return deadJob(row), nil
}
