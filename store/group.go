package store

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// Statements that arrive together are run together. A create (or a plain approval) that
// finds its worker free runs at once, alone. Those that arrive while the worker is busy
// wait, and when it is free it takes all that wait, up to maxGroup, and runs them as one
// statement in one transaction: PostgreSQL then starts the statement and flushes the commit
// once per group, not once per charge. No call waits for a group to fill: one that waits,
// waits for the group being run (and, past maxGroup waiting, the groups ahead). One worker per kind of statement makes the largest groups:
// on two cores, a second worker made smaller groups, more commits and fewer charges a
// second (docs/performance.md).
const (
	groupWorkers = 1
	maxGroup     = 32
)

// grouper hands calls that wait to the workers that run them as groups.
type grouper[T any] struct {
	queue    chan T       // unbuffered: the calls that wait are the senders blocked on it
	waiting  atomic.Int32 // calls no worker has taken yet
	stop     chan struct{}
	stopOnce sync.Once
}

// startGrouper starts workers that run the calls handed to them in groups, with run.
func startGrouper[T any](workers int, run func([]T)) *grouper[T] {
	g := &grouper[T]{queue: make(chan T), stop: make(chan struct{})}
	for range workers {
		go g.work(run)
	}
	return g
}

// hand gives w to a worker. It reports false when the grouper has stopped (the caller then
// runs alone), and ctx's error when ctx ended first.
func (g *grouper[T]) hand(ctx context.Context, w T) (bool, error) {
	g.waiting.Add(1)
	defer g.waiting.Add(-1)
	select {
	case g.queue <- w:
		return true, nil
	case <-g.stop:
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// work runs groups of the calls that wait until the grouper stops.
func (g *grouper[T]) work(run func([]T)) {
	group := make([]T, 0, maxGroup)
	for {
		var first T
		select {
		case first = <-g.queue:
		case <-g.stop:
			return
		}
		group = append(group[:0], first)
	drain:
		for len(group) < maxGroup {
			select {
			case w := <-g.queue:
				group = append(group, w)
			default:
				break drain
			}
		}
		run(group)
		clear(group)
	}
}

// close stops the workers; calls that come later run alone.
func (g *grouper[T]) close() {
	if g != nil {
		g.stopOnce.Do(func() { close(g.stop) })
	}
}

// member is a call that a group runs.
type member interface {
	// callCtx is the call's context.
	callCtx() context.Context
	// fail gives the call err as its result.
	fail(err error)
}

// runGroup runs a group that a worker took: a member whose context ended gets its error; a
// member left alone runs by one; members left together run by many, in groupContext of
// theirs.
func runGroup[T member](group []T, one func(T), many func(ctx context.Context, live []T)) {
	live := group[:0:0]
	for _, w := range group {
		if err := w.callCtx().Err(); err != nil {
			w.fail(err)
			continue
		}
		live = append(live, w)
	}
	switch len(live) {
	case 0:
		return
	case 1:
		one(live[0])
		return
	}
	ctxs := make([]context.Context, len(live))
	for i, w := range live {
		ctxs[i] = w.callCtx()
	}
	ctx, cancel := groupContext(ctxs)
	defer cancel()
	many(ctx, live)
}

// groupContext is the context a group runs in: none of its members' cancellations, and the
// latest of their deadlines (none when a member has none).
func groupContext(ctxs []context.Context) (context.Context, context.CancelFunc) {
	var latest time.Time
	for _, ctx := range ctxs {
		d, ok := ctx.Deadline()
		if !ok {
			return context.WithCancel(context.WithoutCancel(ctxs[0]))
		}
		if d.After(latest) {
			latest = d
		}
	}
	return context.WithDeadline(context.WithoutCancel(ctxs[0]), latest)
}

// startGroups starts the workers that group db's creates and its plain approvals.
func (db *DB) startGroups(workers int) {
	db.creates = startGrouper(workers, db.createGroup)
	db.finishes = startGrouper(workers, db.finishGroup)
}

// stopGroups stops them.
func (db *DB) stopGroups() {
	db.creates.close()
	db.finishes.close()
}
