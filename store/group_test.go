package store

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"
)

// call is a member of a group in the grouper's own tests.
type call struct {
	id   int
	ctx  context.Context
	next chan []*call
	err  error
}

func (c *call) callCtx() context.Context { return c.ctx }
func (c *call) fail(err error)           { c.err = err }
func (c *call) turn() chan []*call       { return c.next }

// recorder is a grouper's run function that records each group it ran, by the members'
// ids, and runs a group whose first member is held only once the test lets it go.
type recorder struct {
	mu      sync.Mutex
	groups  [][]int
	held    int           // id of the call whose group waits for release
	started chan struct{} // closed when the held group starts
	release chan struct{} // closed by the test
}

func newRecorder(held int) *recorder {
	return &recorder{held: held, started: make(chan struct{}), release: make(chan struct{})}
}

func (r *recorder) run(group []*call) {
	if group[0].id == r.held {
		close(r.started)
		<-r.release
	}
	ids := make([]int, len(group))
	for i, c := range group {
		ids[i] = c.id
	}
	r.mu.Lock()
	r.groups = append(r.groups, ids)
	r.mu.Unlock()
}

func (r *recorder) ran() [][]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.groups)
}

func newCall(ctx context.Context, id int) *call {
	return &call{id: id, ctx: ctx, next: make(chan []*call, 1)}
}

// doAll starts a do of each call and returns a channel that gets each one's result.
func doAll(g *grouper[*call], calls ...*call) <-chan error {
	out := make(chan error, len(calls))
	for _, c := range calls {
		go func() {
			ran, err := g.do(c.ctx, c)
			if err == nil && !ran {
				err = errors.New("not run")
			}
			out <- err
		}()
	}
	return out
}

// ranAll waits for each of the calls doAll started, and fails on one that did not run.
func ranAll(t *testing.T, dones ...<-chan error) {
	t.Helper()
	for _, done := range dones {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}

// holdLeader starts call 0, whose statement runs until the test releases it, and returns
// once it runs.
func holdLeader(t *testing.T, g *grouper[*call], r *recorder) <-chan error {
	t.Helper()
	done := doAll(g, newCall(context.Background(), 0))
	<-r.started
	return done
}

// A call that finds no statement of its kind running runs at once, alone, before do returns.
func TestGrouperRunsALoneCallAtOnce(t *testing.T) {
	r := newRecorder(-1)
	g := newGrouper(1, r.run)
	for id := 1; id <= 2; id++ {
		if ran, err := g.do(context.Background(), newCall(context.Background(), id)); !ran || err != nil {
			t.Fatalf("call %d: ran %v, %v", id, ran, err)
		}
	}
	if got := r.ran(); !slices.EqualFunc(got, [][]int{{1}, {2}}, slices.Equal) {
		t.Fatalf("groups %v, want [[1] [2]]", got)
	}
}

// Calls that arrive while a statement runs wait, and run as one group when it ends, up to
// maxGroup a group, in the order they arrived.
func TestGrouperRunsTheCallsThatWaitAsGroups(t *testing.T) {
	r := newRecorder(0)
	g := newGrouper(1, r.run)
	leader := holdLeader(t, g, r)
	dones := []<-chan error{leader}
	for id := 1; id <= maxGroup+3; id++ {
		dones = append(dones, doAll(g, newCall(context.Background(), id)))
		// One at a time, so that the order they wait in is the order of their ids.
		until(t, func() bool { return g.waiting() == id })
	}
	close(r.release)
	ranAll(t, dones...)
	got := r.ran()
	if !slices.Equal(got[0], []int{0}) || len(got[1]) != maxGroup || len(got[2]) != 3 ||
		got[1][0] != 1 || got[2][0] != maxGroup+1 {
		t.Fatalf("groups %v, want [0], then 1 to %d, then the last 3", got, maxGroup)
	}
	if g.waiting() != 0 || g.free != 1 {
		t.Fatalf("after the groups: %d waiting, %d free", g.waiting(), g.free)
	}
}

// A call whose context ends before a group takes it never runs, and do reports why.
func TestGrouperCallGivenUpWhileWaitingNeverRuns(t *testing.T) {
	r := newRecorder(0)
	g := newGrouper(1, r.run)
	leader := holdLeader(t, g, r)
	ctx, cancel := context.WithCancel(context.Background())
	gone := doAll(g, newCall(ctx, 1))
	until(t, func() bool { return g.waiting() == 1 })
	cancel()
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Fatalf("the call given up: %v, want context.Canceled", err)
	}
	if n := g.waiting(); n != 0 {
		t.Fatalf("%d calls wait after the only one gave up", n)
	}
	stays := doAll(g, newCall(context.Background(), 2))
	until(t, func() bool { return g.waiting() == 1 })
	close(r.release)
	ranAll(t, leader, stays)
	if got := r.ran(); !slices.EqualFunc(got, [][]int{{0}, {2}}, slices.Equal) {
		t.Fatalf("groups %v, want [[0] [2]]", got)
	}
}

// Once the grouper is closed, a call runs alone, outside it; calls that waited still run.
func TestGrouperClosedLetsCallsRunAlone(t *testing.T) {
	r := newRecorder(0)
	g := newGrouper(1, r.run)
	leader := holdLeader(t, g, r)
	waited := doAll(g, newCall(context.Background(), 1))
	until(t, func() bool { return g.waiting() == 1 })
	g.close()
	if ran, err := g.do(context.Background(), newCall(context.Background(), 2)); ran || err != nil {
		t.Fatalf("a call after close: ran %v, %v; want it left to the caller", ran, err)
	}
	close(r.release)
	ranAll(t, leader, waited)
	if got := r.ran(); !slices.EqualFunc(got, [][]int{{0}, {1}}, slices.Equal) {
		t.Fatalf("groups %v, want [[0] [1]]", got)
	}
}

// until waits for cond, which the calls' goroutines make true.
func until(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for the calls")
		}
		runtime.Gosched()
	}
}
