package policysim

import (
	"container/heap"
	"context"
	"net/http"
	"time"
)

// origin is the fake clock's reading when a simulation starts, Monday 2
// March 2026 12:00:00 UTC: every simulation starts at this instant, so an
// HTTP-date in a script (a Retry-After, a Date header) is written against
// it. The Date header of an answer at 40 ms with no clock skew reads "Mon, 02
// Mar 2026 12:00:00 GMT".
var origin = time.Date(2026, time.March, 2, 12, 0, 0, 0, time.UTC)

// loop is one operation's retry loop as the simulator drives it: the
// gateway's (retry.Run) or a baseline's.
type loop interface {
	// begin starts the next attempt at now, returning its number and
	// timeout, or false when the loop stopped before sending.
	begin(now time.Time) (n int, timeout time.Duration, ok bool)
	// next closes the attempt with the processor's answer, observed at now,
	// and returns the wait before the next attempt, or false when the loop
	// stopped.
	next(now time.Time, answer Step) (wait time.Duration, again bool)
	// cancel stops the loop at now because the caller gave up.
	cancel(now time.Time)
	// done reports whether the loop stopped.
	done() bool
	// outcome returns the operation's result once the loop stopped.
	outcome() opOutcome
}

// opOutcome is one operation's result, as a population counts it.
type opOutcome struct {
	// result is "succeeded", "declined", "pending" or "failed:CODE".
	result string
	// stop is why the loop stopped (a retry.StopReason for the gateway's).
	stop string
	// attempts is how many attempts were sent.
	attempts int
}

// starter starts the loop of operation op (from 0) at now.
type starter func(op int, now time.Time) loop

// responder returns the processor's answer to attempt n (from 1) of
// operation op, sent at at since the simulation's start.
type responder func(op, n int, at time.Duration) Step

// eventKind is what an event does.
type eventKind uint8

const (
	eventArrive eventKind = iota // operation op arrives and sends its first attempt
	eventBegin                   // operation op's wait ended: the next attempt
	eventAnswer                  // operation op's attempt ended with answer
	eventCancel                  // operation op's caller gives up
)

// event is one scheduled step of one operation on the fake clock.
type event struct {
	at     time.Time
	seq    uint64 // scheduling order breaks ties, so runs are deterministic
	op     int
	kind   eventKind
	answer Step
}

// queue is a priority queue of events, earliest first.
type queue []event

func (q queue) Len() int { return len(q) }
func (q queue) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}
func (q queue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *queue) Push(x any)   { *q = append(*q, x.(event)) }
func (q *queue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

// engine is a deterministic discrete-event simulation on a fake clock:
// operations arrive at a steady interval, each runs its own loop, and the
// processor answers through a responder. Nothing reads the real clock or
// sleeps; time jumps from one event to the next.
type engine struct {
	operations int
	interval   time.Duration // between arrivals
	cancelAt   time.Duration // after each arrival; 0 for never
	skew       time.Duration // the processor's clock minus the gateway's
	start      starter
	respond    responder
	// finished is called once per operation when its loop stops.
	finished func(op int, l loop)

	q     queue
	seq   uint64
	loops map[int]loop // operations in progress
	stats counts
}

// counts is what the engine counts as it runs.
type counts struct {
	attempts  int
	perSecond []Second
	end       time.Time // when the last operation stopped
}

// run simulates every operation to its end. It returns ctx's error if ctx
// ends first.
func (e *engine) run(ctx context.Context) error {
	e.loops = make(map[int]loop)
	e.stats.end = origin
	if e.operations > 0 {
		e.push(origin, 0, eventArrive, Step{})
	}
	for i := 0; e.q.Len() > 0; i++ {
		if i%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		ev := heap.Pop(&e.q).(event)
		now := ev.at
		if ev.kind == eventArrive {
			if ev.op+1 < e.operations {
				e.push(origin.Add(time.Duration(ev.op+1)*e.interval), ev.op+1, eventArrive, Step{})
			}
			e.loops[ev.op] = e.start(ev.op, now)
			if e.cancelAt > 0 {
				e.push(now.Add(e.cancelAt), ev.op, eventCancel, Step{})
			}
		}
		l, ok := e.loops[ev.op]
		if !ok {
			continue // the operation already stopped: a stale event
		}
		switch ev.kind {
		case eventArrive, eventBegin:
			e.begin(now, ev.op, l)
		case eventAnswer:
			if wait, again := l.next(now, ev.answer); again {
				e.push(now.Add(wait), ev.op, eventBegin, Step{})
			}
		case eventCancel:
			l.cancel(now)
		}
		if l.done() {
			delete(e.loops, ev.op)
			e.stats.end = now
			e.finished(ev.op, l)
		}
	}
	return nil
}

// begin starts an attempt of operation op at now and schedules its answer.
func (e *engine) begin(now time.Time, op int, l loop) {
	n, timeout, ok := l.begin(now)
	if !ok {
		return
	}
	e.count(now, n)
	answer := e.respond(op, n, now.Sub(origin))
	answer, took := perform(answer, timeout)
	if answer.answered() && !answer.HasDate && answer.RetryAfter != "" {
		// The processor's clock. Only a Retry-After reads the Date header,
		// so an answer without one skips the formatting.
		answer.Date = now.Add(took).Add(e.skew).UTC().Format(http.TimeFormat)
	}
	e.push(now.Add(took), op, eventAnswer, answer)
}

// perform plays one scripted answer against the attempt's timeout: it
// returns the answer the client sees and how long the attempt takes. An
// answer or a dropped connection slower than the timeout is a timeout.
func perform(s Step, timeout time.Duration) (Step, time.Duration) {
	switch {
	case s.Timeout:
		return s, timeout
	case s.Latency <= timeout:
		return s, s.Latency
	case s.Refused:
		return s, timeout // the connection attempt timed out: still never sent
	default:
		return Step{Timeout: true}, timeout
	}
}

// count records an attempt started at now.
func (e *engine) count(now time.Time, n int) {
	e.stats.attempts++
	sec := int(now.Sub(origin) / time.Second)
	for len(e.stats.perSecond) <= sec {
		e.stats.perSecond = append(e.stats.perSecond, Second{Second: len(e.stats.perSecond)})
	}
	if n == 1 {
		e.stats.perSecond[sec].Originals++
	} else {
		e.stats.perSecond[sec].Retries++
	}
}

func (e *engine) push(at time.Time, op int, kind eventKind, answer Step) {
	e.seq++
	heap.Push(&e.q, event{at: at, seq: e.seq, op: op, kind: kind, answer: answer})
}
