package store

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Statements that arrive together are run together. A create (or a plain approval) that
// finds no statement of its kind running runs at once, alone, on the caller's own goroutine.
// Those that arrive while one runs wait, and when it ends, the calls that wait, up to
// maxGroup, run as one statement in one transaction: PostgreSQL then starts the statement
// and flushes the commit once per group, not once per charge. The first of them runs the
// group for all (it leads it); the one that led the statement before hands it the group. No
// call waits for a group to fill: one that waits, waits for the statement that runs (and,
// past maxGroup waiting, the groups ahead). One statement of each kind at a time makes the
// largest groups: on two cores, two at a time made smaller groups, more commits and fewer
// charges a second (docs/performance.md).
const (
	groupLeaders = 1
	maxGroup     = 32
)

// grouper runs the calls of one kind of statement: alone while no statement of the kind
// runs, in groups while one does.
type grouper[T member[T]] struct {
	run     func([]T) // runs a group (of one or more) and gives each member its result
	mu      sync.Mutex
	free    int  // statements that may start now: leaders that may lead
	queue   []T  // the calls that wait, oldest first
	stopped bool // calls run alone, outside the grouper
}

// newGrouper returns a grouper that lets leaders statements run at once and runs each
// group with run.
func newGrouper[T member[T]](leaders int, run func([]T)) *grouper[T] {
	return &grouper[T]{run: run, free: leaders}
}

// do runs w, alone or in a group, and reports whether it did: false when the grouper has
// stopped (the caller then runs alone), and ctx's error when ctx ended before a group took
// w (w then never runs). Once do has run w, w has its result, or will have it soon: the
// members of a group that the database refused run again alone, after it.
func (g *grouper[T]) do(ctx context.Context, w T) (bool, error) {
	g.mu.Lock()
	switch {
	case g.stopped:
		g.mu.Unlock()
		return false, nil
	case g.free > 0:
		g.free--
		g.mu.Unlock()
		g.lead([]T{w})
		return true, nil
	}
	g.queue = append(g.queue, w)
	g.mu.Unlock()
	select {
	case group := <-w.turn():
		if group != nil {
			g.lead(group)
		}
		return true, nil
	case <-ctx.Done():
	}
	g.mu.Lock()
	if i := slices.Index(g.queue, w); i >= 0 {
		g.queue = slices.Delete(g.queue, i, i+1)
		g.mu.Unlock()
		return false, ctx.Err()
	}
	g.mu.Unlock()
	// A group took w already: w leads it, for its members wait for that, or waits until its
	// leader ran it.
	if group := <-w.turn(); group != nil {
		g.lead(group)
	}
	return true, nil
}

// lead runs group, hands the calls that waited meanwhile to the first of them (or frees
// the statement when none did), then tells the group's other members that it ran.
func (g *grouper[T]) lead(group []T) {
	g.run(group)
	g.mu.Lock()
	if n := min(len(g.queue), maxGroup); n > 0 {
		next := slices.Clone(g.queue[:n])
		rest := copy(g.queue, g.queue[n:])
		clear(g.queue[rest:])
		g.queue = g.queue[:rest]
		next[0].turn() <- next
	} else {
		g.free++
	}
	g.mu.Unlock()
	for _, w := range group[1:] {
		w.turn() <- nil
	}
}

// waiting is how many calls wait for a statement to end.
func (g *grouper[T]) waiting() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.queue)
}

// close makes the calls that come later run alone; those that wait still run in groups.
func (g *grouper[T]) close() {
	if g != nil {
		g.mu.Lock()
		g.stopped = true
		g.mu.Unlock()
	}
}

// member is a call that a group runs.
type member[T any] interface {
	comparable
	// callCtx is the call's context.
	callCtx() context.Context
	// fail gives the call err as its result.
	fail(err error)
	// turn receives the group the call leads (buffered: the call that hands it over never
	// waits).
	turn() chan []T
}

// runGroup runs a group: a member whose context ended gets its error; a member left alone
// runs by one; members left together run by many, in groupContext of theirs.
func runGroup[T member[T]](group []T, one func(T), many func(ctx context.Context, live []T)) {
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

// startGroups has db's creates and its plain approvals grouped, with leaders statements of
// each kind at a time.
func (db *DB) startGroups(leaders int) {
	db.creates = newGrouper(leaders, db.createGroup)
	db.finishes = newGrouper(leaders, db.finishGroup)
}

// stopGroups has the calls that come later run alone.
func (db *DB) stopGroups() {
	db.creates.close()
	db.finishes.close()
}
