package jobs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// Bounds of DeadParams.Limit.
const (
	DefaultDeadLimit = 50
	MaxDeadLimit     = 500
)

// DeadJob is a dead letter: a job River discarded after its last attempt failed (or after
// the replica running it died, for a job with one attempt), with everything an operator
// needs to decide on a replay. Replay returns the same view of the job it put back.
type DeadJob struct {
	ID    int64  `json:"id"`
	Kind  string `json:"kind"`
	Queue string `json:"queue"`
	// State is "discarded" for a dead letter; after a replay, River's new state.
	State string `json:"state"`
	// Args are the job's arguments as River stored them.
	Args json.RawMessage `json:"args"`
	// Errors are River's attempt errors, oldest first.
	Errors      []AttemptError `json:"errors"`
	Attempts    int            `json:"attempts"`
	MaxAttempts int            `json:"max_attempts"`
	// Merchant is the merchant the job works for, when it was inserted with ForMerchant.
	Merchant string `json:"merchant_id,omitempty"`
	// Replays are the earlier replays of this job, oldest first.
	Replays     []ReplayRecord `json:"replays,omitempty"`
	CreatedAt   time.Time      `json:"created_at"`
	FinalizedAt *time.Time     `json:"finalized_at,omitempty"`
}

// AttemptError is the error one attempt of a job ended with.
type AttemptError struct {
	Attempt int       `json:"attempt"`
	At      time.Time `json:"at"`
	Error   string    `json:"error"`
}

// ReplayRecord is the audit entry a replay leaves on its job.
type ReplayRecord struct {
	At time.Time `json:"at"`
	// By names who asked for the replay (an API key id, an operator).
	By string `json:"by"`
	// Attempt is the number of attempts the job had made when it was replayed.
	Attempt int `json:"attempt"`
}

// jobMeta is the part of River's job metadata this package reads.
type jobMeta struct {
	Merchant string         `json:"merchant_id"`
	Replays  []ReplayRecord `json:"paygate_replays"`
}

// metaReplays is the job metadata key of the replay audit.
const metaReplays = "paygate_replays"

// DeadParams selects a page of dead letters.
type DeadParams struct {
	// Limit is the page size: 1 to MaxDeadLimit, DefaultDeadLimit when zero.
	Limit int
	// Cursor is the next value of the previous page; empty for the first page.
	Cursor string
	// Merchant, when set, keeps only the jobs inserted for that merchant (ForMerchant).
	Merchant string
}

// Dead lists dead letters, newest first (by the time they were discarded), a page at a
// time. It returns the page and the cursor of the next page, empty on the last. It returns
// an error wrapping ErrBadPage for a cursor it did not hand out or a limit out of bounds.
func (q *Queue) Dead(ctx context.Context, p DeadParams) ([]DeadJob, string, error) {
	limit := p.Limit
	switch {
	case limit == 0:
		limit = DefaultDeadLimit
	case limit < 0 || limit > MaxDeadLimit:
		return nil, "", fmt.Errorf("%w: limit %d out of 1..%d", ErrBadPage, limit, MaxDeadLimit)
	}
	params := river.NewJobListParams().
		States(rivertype.JobStateDiscarded).
		OrderBy(river.JobListOrderByFinalizedAt, river.SortOrderDesc)
	if p.Merchant != "" {
		frag, err := json.Marshal(map[string]string{metaMerchant: p.Merchant})
		if err != nil {
			return nil, "", fmt.Errorf("jobs: dead letters: %w", err)
		}
		params = params.Metadata(string(frag))
	}
	if p.Cursor != "" {
		var c river.JobListCursor
		if err := c.UnmarshalText([]byte(p.Cursor)); err != nil {
			return nil, "", fmt.Errorf("%w: cursor: %v", ErrBadPage, err)
		}
		params = params.After(&c)
	}
	res, err := q.client.JobList(ctx, params.First(limit))
	if err != nil {
		return nil, "", fmt.Errorf("jobs: dead letters: %w", err)
	}
	out := make([]DeadJob, 0, len(res.Jobs))
	for _, j := range res.Jobs {
		out = append(out, deadJob(j))
	}
	if len(res.Jobs) < limit {
		return out, "", nil
	}
	// A full page: look one job ahead so the last page says it is the last.
	more, err := q.client.JobList(ctx, params.After(res.LastCursor).First(1))
	if err != nil {
		return nil, "", fmt.Errorf("jobs: dead letters: %w", err)
	}
	if len(more.Jobs) == 0 {
		return out, "", nil
	}
	next, err := res.LastCursor.MarshalText()
	if err != nil {
		return nil, "", fmt.Errorf("jobs: dead letters: cursor: %w", err)
	}
	return out, string(next), nil
}

func deadJob(j *rivertype.JobRow) DeadJob {
	var meta jobMeta
	_ = json.Unmarshal(j.Metadata, &meta) // River's metadata is always an object; a stray one only loses the audit
	errs := make([]AttemptError, 0, len(j.Errors))
	for _, e := range j.Errors {
		errs = append(errs, AttemptError{Attempt: e.Attempt, At: e.At.UTC(), Error: e.Error})
	}
	d := DeadJob{
		ID:          j.ID,
		Kind:        j.Kind,
		Queue:       j.Queue,
		State:       string(j.State),
		Args:        json.RawMessage(j.EncodedArgs),
		Errors:      errs,
		Attempts:    j.Attempt,
		MaxAttempts: j.MaxAttempts,
		Merchant:    meta.Merchant,
		Replays:     meta.Replays,
		CreatedAt:   j.CreatedAt.UTC(),
	}
	if j.FinalizedAt != nil {
		t := j.FinalizedAt.UTC()
		d.FinalizedAt = &t
	}
	return d
}

// isNotFound reports River's not-found error.
func isNotFound(err error) bool { return errors.Is(err, rivertype.ErrNotFound) }
