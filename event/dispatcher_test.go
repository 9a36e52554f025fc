package event_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/riverqueue/river"

	"github.com/paygate/paygate/event"
	"github.com/paygate/paygate/jobs"
)

// fakeDispatch is the store as the dispatcher sees it: a watermark and the events due.
type fakeDispatch struct {
	event.Store
	watermark, now time.Time
	due            []event.Due
	from           []time.Time
}

func (f *fakeDispatch) DispatchFrom(context.Context) (time.Time, time.Time, error) {
	return f.watermark, f.now, nil
}
func (f *fakeDispatch) NewDeliveries(_ context.Context, from, to time.Time, _ time.Duration) ([]event.Due, error) {
	f.from = append(f.from, from)
	var out []event.Due
	for _, d := range f.due {
		if !d.Event.Created.Before(from) && d.Event.Created.Before(to) {
			out = append(out, d)
		}
	}
	return out, nil
}
func (f *fakeDispatch) AdvanceDispatch(_ context.Context, to time.Time) error {
	if to.After(f.watermark) {
		f.watermark = to
	}
	return nil
}

type fakeQueue struct {
	inserted []event.DeliveryArgs
	fail     bool
}

func (q *fakeQueue) Insert(_ context.Context, args river.JobArgs, opts *river.InsertOpts) (jobs.Inserted, error) {
	if q.fail {
		return jobs.Inserted{}, errors.New("database down")
	}
	if !opts.UniqueOpts.ByArgs {
		return jobs.Inserted{}, errors.New("a delivery must be unique per event and endpoint")
	}
	q.inserted = append(q.inserted, args.(event.DeliveryArgs))
	return jobs.Inserted{ID: int64(len(q.inserted))}, nil
}

// TestDispatcherLook: each look starts the overlap before the watermark, enqueues each
// delivery once however many looks meet it, and moves the watermark only once its
// deliveries are enqueued.
func TestDispatcherLook(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1800000000, 0)
	ev := func(id string, at time.Time) event.Due {
		return event.Due{Event: event.Event{ID: id, MerchantID: "m", Created: at, Type: event.ChargeSucceeded}, EndpointID: "we_1"}
	}
	st := &fakeDispatch{watermark: t0, now: t0.Add(time.Second), due: []event.Due{ev("evt_a_o", t0.Add(500*time.Millisecond))}}
	q := &fakeQueue{}
	d := event.NewDispatcher(event.DispatcherConfig{Store: st, Queue: q, Overlap: time.Minute})
	ctx := context.Background()
	if n, err := d.Look(ctx); err != nil || n != 1 {
		t.Fatalf("first look: got %d %v, want 1 inserted", n, err)
	}
	if !st.from[0].Equal(t0.Add(-time.Minute)) || !st.watermark.Equal(t0.Add(time.Second)) {
		t.Fatalf("first look from %s, watermark %s", st.from[0], st.watermark)
	}
	// An event that committed late, dated before the watermark, is found by the overlap;
	// the one already enqueued is not asked for again.
	st.due = append(st.due, ev("evt_b_o", t0.Add(800*time.Millisecond)))
	st.now = t0.Add(2 * time.Second)
	if n, err := d.Look(ctx); err != nil || n != 1 || len(q.inserted) != 2 || q.inserted[1].EventID != "evt_b_o" {
		t.Fatalf("second look: got %d %v, inserted %v", n, err, q.inserted)
	}
	// A look that cannot enqueue leaves the watermark where it was.
	st.due = append(st.due, ev("evt_c_o", t0.Add(2500*time.Millisecond)))
	st.now = t0.Add(3 * time.Second)
	q.fail = true
	if _, err := d.Look(ctx); err == nil || !st.watermark.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("a failed look: got %v, watermark %s, want an error and the watermark kept", err, st.watermark)
	}
	q.fail = false
	if n, err := d.Look(ctx); err != nil || n != 1 || q.inserted[2].EventID != "evt_c_o" || q.inserted[2].Created != t0.Add(2500*time.Millisecond).Unix() {
		t.Fatalf("the look after: got %d %v, inserted %v", n, err, q.inserted)
	}
}
