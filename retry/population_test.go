package retry

import (
	"container/heap"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// This file is a small discrete-event simulation of a population of
// operations sharing one budget and one breaker, on a fake clock: the way the
// retry-policy simulator drives the core.

// population describes one simulated run.
type population struct {
	operations int
	ratePerSec float64
	errorRate  float64 // share of attempts answered 503, at random
	down       bool    // every attempt is answered 503
	breaker    bool    // guard the account with a breaker
	seed       uint64
}

// outcome of a simulated population.
type populationResult struct {
	Operations, Attempts, Succeeded, Failed int
	PreventedByBudget, CircuitOpen          int
	Reports                                 []Report
}

func (r populationResult) amplification() float64 {
	return float64(r.Attempts) / float64(r.Operations)
}

func (r populationResult) String() string {
	return fmt.Sprintf("operations %d, attempts %d (amplification %.4f), succeeded %d, failed %d, prevented by budget %d, circuit open %d",
		r.Operations, r.Attempts, r.amplification(), r.Succeeded, r.Failed, r.PreventedByBudget, r.CircuitOpen)
}

// event is one scheduled step of one operation.
type event struct {
	at  time.Time
	seq int // insertion order breaks ties, for determinism
	op  int
	out *Outcome // nil: begin an attempt; else: the attempt ends with it
}

type eventQueue []event

func (q eventQueue) Len() int { return len(q) }
func (q eventQueue) Less(i, j int) bool {
	if !q[i].at.Equal(q[j].at) {
		return q[i].at.Before(q[j].at)
	}
	return q[i].seq < q[j].seq
}
func (q eventQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *eventQueue) Push(x any)   { *q = append(*q, x.(event)) }
func (q *eventQueue) Pop() any {
	old := *q
	e := old[len(old)-1]
	*q = old[:len(old)-1]
	return e
}

func simulatePopulation(t *testing.T, pop population) populationResult {
	t.Helper()
	policy := DefaultPolicy()
	budgets, err := NewBudgets(DefaultScopeBudget(), DefaultGlobalBudget())
	if err != nil {
		t.Fatalf("NewBudgets: got error %v, want nil", err)
	}
	budget := budgets.For("acct", "merchant")
	var breaker Breaker
	if pop.breaker {
		breaker = newCircuitT(t, DefaultBreakerConfig())
	}
	jitter := rand.New(rand.NewPCG(pop.seed, 1)) // one source: the simulation is single-threaded
	faults := rand.New(rand.NewPCG(pop.seed, 2))
	const latency = 40 * time.Millisecond

	runs := make([]*Run, pop.operations)
	q := &eventQueue{}
	seq := 0
	push := func(at time.Time, op int, out *Outcome) {
		seq++
		heap.Push(q, event{at: at, seq: seq, op: op, out: out})
	}
	interval := time.Duration(float64(time.Second) / pop.ratePerSec)
	for i := range pop.operations {
		push(t0.Add(time.Duration(i)*interval), i, nil)
	}
	res := populationResult{Operations: pop.operations}
	for q.Len() > 0 {
		e := heap.Pop(q).(event)
		if runs[e.op] == nil {
			runs[e.op], err = NewRun(e.at, policy, Operation{
				IdempotencyKey: fmt.Sprint("pg_ch_", e.op),
				Budget:         budget,
				Breaker:        breaker,
				Rand:           jitter,
			})
			if err != nil {
				t.Fatalf("NewRun: got error %v, want nil", err)
			}
		}
		run := runs[e.op]
		if e.out == nil {
			if _, ok := run.Begin(e.at); !ok {
				continue
			}
			res.Attempts++
			out := Outcome{Class: ClassSuccess, HTTPStatus: 200}
			if pop.down || faults.Float64() < pop.errorRate {
				out = Outcome{Class: ClassRetry, HTTPStatus: 503}
			}
			push(e.at.Add(latency), e.op, &out)
			continue
		}
		if d := run.Next(e.at, *e.out); d.Retry {
			push(e.at.Add(d.Wait), e.op, nil)
		}
	}
	for _, run := range runs {
		rep := run.Report()
		res.Reports = append(res.Reports, rep)
		switch {
		case rep.Result.Status == StatusSucceeded:
			res.Succeeded++
		default:
			res.Failed++
		}
		switch rep.Stop {
		case StopBudget:
			res.PreventedByBudget++
		case StopCircuitOpen:
			res.CircuitOpen++
		}
	}
	return res
}

func TestPopulationOutage(t *testing.T) {
	t.Parallel()
	for _, withBreaker := range []bool{false, true} {
		t.Run(fmt.Sprint("breaker=", withBreaker), func(t *testing.T) {
			t.Parallel()
			pop := population{operations: 10000, ratePerSec: 100, down: true, breaker: withBreaker, seed: 1}
			res := simulatePopulation(t, pop)
			t.Log(res)
			if got := res.amplification(); got > 1.10 {
				t.Errorf("amplification: got %.4f, want ≤ 1.10", got)
			}
			// 100 s of arrivals plus the last deadline: the scope's burst plus
			// its floor bounds the retries.
			cfg := DefaultScopeBudget()
			limit := int(cfg.Burst + cfg.MinPerSec*(100+8))
			if retries := res.Attempts - (res.Operations - res.CircuitOpen); retries > limit {
				t.Errorf("retries: got %d, want ≤ %d", retries, limit)
			}
			if res.Succeeded != 0 {
				t.Errorf("succeeded: got %d, want 0 during a full outage", res.Succeeded)
			}
		})
	}
}

func TestPopulationRandomErrors(t *testing.T) {
	t.Parallel()
	pop := population{operations: 10000, ratePerSec: 100, errorRate: 0.10, breaker: true, seed: 7}
	res := simulatePopulation(t, pop)
	t.Log(res)
	if got := float64(res.Succeeded) / float64(res.Operations); got < 0.999 {
		t.Errorf("success rate: got %.4f, want ≥ 0.999", got)
	}
	if got := res.amplification(); got > 1.13 {
		t.Errorf("amplification: got %.4f, want ≤ 1.13", got)
	}
}

func TestPopulationDeterministic(t *testing.T) {
	t.Parallel()
	pop := population{operations: 2000, ratePerSec: 200, errorRate: 0.3, breaker: true, seed: 99}
	a, err := json.Marshal(simulatePopulation(t, pop).Reports)
	if err != nil {
		t.Fatalf("json.Marshal: got error %v, want nil", err)
	}
	b, err := json.Marshal(simulatePopulation(t, pop).Reports)
	if err != nil {
		t.Fatalf("json.Marshal: got error %v, want nil", err)
	}
	if string(a) != string(b) {
		t.Errorf("two runs with seed %d: got different reports, want identical", pop.seed)
	}
}
