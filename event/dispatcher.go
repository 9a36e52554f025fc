package event

import (
	"context"
	"time"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"go.uber.org/zap"

	"github.com/paygate/paygate/jobs"
)

// Inserter enqueues jobs (a *jobs.Queue).
type Inserter interface {
	Insert(ctx context.Context, args river.JobArgs, opts *river.InsertOpts) (jobs.Inserted, error)
}

// DispatcherConfig configures a Dispatcher.
type DispatcherConfig struct {
	Store Store
	Queue Inserter
	// Every is the time between looks. Default 250 ms.
	Every time.Duration
	// Overlap is how far back before its watermark a look starts again: transactions
	// commit out of the order of their times, and one that committed after the last look
	// may have written an event dated before it. Default 1 min.
	Overlap time.Duration
	// Window is how long after a charge's creation its own run may write its first outcome
	// (a request's deadline and its key's lock margin, well within it). Default 5 min.
	Window time.Duration
	Log    *zap.Logger
}

// Dispatcher enqueues the deliveries of new events: every replica runs one; the jobs'
// uniqueness per event and endpoint makes them agree.
type Dispatcher struct {
	cfg DispatcherConfig
	// seen are the deliveries this process enqueued that a look may meet again (their
	// event is within the overlap), so that it does not ask River for them twice.
	seen map[Due]time.Time
}

// NewDispatcher returns the dispatcher of cfg.
func NewDispatcher(cfg DispatcherConfig) *Dispatcher {
	if cfg.Every <= 0 {
		cfg.Every = 250 * time.Millisecond
	}
	if cfg.Overlap <= 0 {
		cfg.Overlap = time.Minute
	}
	if cfg.Window <= 0 {
		cfg.Window = 5 * time.Minute
	}
	if cfg.Log == nil {
		cfg.Log = zap.NewNop()
	}
	return &Dispatcher{cfg: cfg, seen: map[Due]time.Time{}}
}

// Run looks for new events every Every until ctx ends.
func (d *Dispatcher) Run(ctx context.Context) {
	t := time.NewTicker(d.cfg.Every)
	defer t.Stop()
	for {
		if _, err := d.Look(ctx); err != nil && ctx.Err() == nil {
			d.cfg.Log.Warn("event dispatch", zap.Error(err))
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// uniqueDelivery allows one delivery job per event and endpoint, completed ones included
// (River keeps them a day, far longer than the overlap): a look over the same events
// enqueues nothing twice. A dead letter holds no key; its replay is the way to run it again.
var uniqueDelivery = river.UniqueOpts{
	ByArgs: true,
	ByState: []rivertype.JobState{
		rivertype.JobStateAvailable, rivertype.JobStateCompleted, rivertype.JobStatePending,
		rivertype.JobStateRetryable, rivertype.JobStateRunning, rivertype.JobStateScheduled,
	},
}

// Look enqueues the deliveries of the events written since the watermark less the overlap,
// then moves the watermark to the database's time the look began. It returns how many jobs
// it inserted.
func (d *Dispatcher) Look(ctx context.Context) (int, error) {
	from, now, err := d.cfg.Store.DispatchFrom(ctx)
	if err != nil {
		return 0, err
	}
	from = from.Add(-d.cfg.Overlap)
	due, err := d.cfg.Store.NewDeliveries(ctx, from, now, d.cfg.Window)
	if err != nil {
		return 0, err
	}
	inserted := 0
	for _, x := range due {
		if _, ok := d.seen[x]; ok {
			continue
		}
		opts, err := jobs.ForMerchant(&river.InsertOpts{UniqueOpts: uniqueDelivery}, x.Event.MerchantID)
		if err != nil {
			return inserted, err
		}
		res, err := d.cfg.Queue.Insert(ctx, DeliveryArgs{EventID: x.Event.ID, EndpointID: x.EndpointID,
			MerchantID: x.Event.MerchantID, Created: x.Event.Created.Unix()}, opts)
		if err != nil {
			return inserted, err
		}
		d.seen[x] = x.Event.Created
		if !res.Duplicate {
			inserted++
		}
	}
	for x, at := range d.seen {
		if at.Before(from) {
			delete(d.seen, x)
		}
	}
	if err := d.cfg.Store.AdvanceDispatch(ctx, now); err != nil {
		return inserted, err
	}
	return inserted, nil
}
