package jobs

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
)

// metaMerchant is the job metadata key naming the merchant a job works for.
const metaMerchant = "merchant_id"

// Inserted is the outcome of an insert.
type Inserted struct {
	// ID is the job's id: the new job's, or for a duplicate the live job's that holds the
	// same unique key.
	ID int64
	// Duplicate reports that nothing was inserted because a live job with the same unique
	// key exists.
	Duplicate bool
}

// Insert enqueues one job in a transaction of its own. opts may be nil; see InsertTx.
func (q *Queue) Insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (Inserted, error) {
	opts, err := q.insertOpts(args, opts)
	if err != nil {
		return Inserted{}, err
	}
	res, err := q.client.Insert(ctx, args, opts)
	if err != nil {
		return Inserted{}, fmt.Errorf("jobs: insert %s: %w", args.Kind(), err)
	}
	return Inserted{ID: res.Job.ID, Duplicate: res.UniqueSkippedAsDuplicate}, nil
}

// InsertTx enqueues one job inside tx, so that it exists if and only if tx commits: a job
// is enqueued atomically with the state change that needs it, and no worker sees it before
// the commit. tx must be on the queue's database.
//
// opts may be nil. Its Queue defaults to the kind's policy; ScheduledAt delays the job
// (it never runs before); UniqueOpts (see UniquePerArgs) makes the insert a no-op, with
// Duplicate set, while a live job with the same key exists; Metadata may carry the job's
// merchant (see ForMerchant). MaxAttempts comes from the kind's policy: setting another
// value returns an error wrapping ErrPolicy.
func (q *Queue) InsertTx(ctx context.Context, tx pgx.Tx, args river.JobArgs, opts *river.InsertOpts) (Inserted, error) {
	opts, err := q.insertOpts(args, opts)
	if err != nil {
		return Inserted{}, err
	}
	res, err := q.client.InsertTx(ctx, tx, args, opts)
	if err != nil {
		return Inserted{}, fmt.Errorf("jobs: insert %s: %w", args.Kind(), err)
	}
	return Inserted{ID: res.Job.ID, Duplicate: res.UniqueSkippedAsDuplicate}, nil
}

func (q *Queue) insertOpts(args river.JobArgs, opts *river.InsertOpts) (*river.InsertOpts, error) {
	pol, known := q.policies.get(args.Kind())
	if !known {
		return nil, fmt.Errorf("%w: kind %q is not registered", ErrPolicy, args.Kind())
	}
	var o river.InsertOpts
	if opts != nil {
		o = *opts
	}
	if o.MaxAttempts != 0 && o.MaxAttempts != pol.MaxAttempts {
		return nil, fmt.Errorf("%w: kind %q runs with %d attempts, not %d", ErrPolicy, args.Kind(), pol.MaxAttempts, o.MaxAttempts)
	}
	if o.Queue == "" {
		o.Queue = pol.Queue
	}
	return &o, nil
}

// UniquePerArgs returns unique options allowing one live job (waiting, scheduled, running
// or retrying) per kind and key, the key being the args fields tagged `river:"unique"`
// (all args when none is tagged):
//
//	type ReconcileArgs struct {
//		ChargeID string `json:"charge_id" river:"unique"`
//	}
//
// Completed, cancelled and dead jobs do not hold the key, so the same charge can be
// enqueued again later. A job that must run again for the same key returns
// river.JobSnooze from its worker instead of inserting a successor, which its own live
// row would refuse.
func UniquePerArgs() river.UniqueOpts {
	return river.UniqueOpts{
		ByArgs: true,
		ByState: []rivertype.JobState{
			rivertype.JobStateAvailable,
			rivertype.JobStatePending,
			rivertype.JobStateRetryable,
			rivertype.JobStateRunning,
			rivertype.JobStateScheduled,
		},
	}
}

// ForMerchant returns a copy of opts (nil is fine) whose metadata names the merchant the
// job works for, so that a merchant's operators see and replay only its dead letters
// (DeadParams.Merchant, ReplayParams.Merchant). Jobs without a merchant (housekeeping) are
// visible only to unscoped listings.
func ForMerchant(opts *river.InsertOpts, merchant string) (*river.InsertOpts, error) {
	var o river.InsertOpts
	if opts != nil {
		o = *opts
	}
	meta := map[string]any{}
	if len(o.Metadata) > 0 {
		if err := json.Unmarshal(o.Metadata, &meta); err != nil {
			return nil, fmt.Errorf("jobs: insert metadata: %w", err)
		}
	}
	meta[metaMerchant] = merchant
	b, err := json.Marshal(meta)
	if err != nil {
		return nil, fmt.Errorf("jobs: insert metadata: %w", err)
	}
	o.Metadata = b
	return &o, nil
}
