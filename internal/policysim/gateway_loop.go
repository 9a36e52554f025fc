package policysim

import (
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/paygate/paygate/retry"
)

// gatewayLoop is the gateway's own retry loop, retry.Run, driven step by
// step on the fake clock.
type gatewayLoop struct {
	run  *retry.Run
	read bool
	keys []string // the distinct idempotency keys the attempts carried
}

func (l *gatewayLoop) begin(now time.Time) (int, time.Duration, bool) {
	a, ok := l.run.Begin(now)
	if !ok {
		return 0, 0, false
	}
	if a.IdempotencyKey != "" && (len(l.keys) == 0 || l.keys[len(l.keys)-1] != a.IdempotencyKey) {
		l.keys = append(l.keys, a.IdempotencyKey)
	}
	return a.N, a.Timeout, true
}

func (l *gatewayLoop) next(now time.Time, answer Step) (time.Duration, bool) {
	d := l.run.Next(now, Classify(answer, l.read))
	return d.Wait, d.Retry
}

func (l *gatewayLoop) cancel(now time.Time) { l.run.Cancel(now) }

func (l *gatewayLoop) done() bool { return l.run.Done() }

func (l *gatewayLoop) outcome() opOutcome {
	rep := l.run.Report()
	return opOutcome{result: rep.Result.String(), stop: string(rep.Stop), attempts: len(rep.Attempts)}
}

// gateway holds what the operations of one simulation share when they run
// the gateway's loop: the policy, one budget, one breaker and one jitter
// source (the simulation is single-threaded).
type gateway struct {
	policy  retry.Policy
	op      Operation
	budget  retry.Budget
	breaker retry.Breaker
	jitter  *rand.Rand
}

// newGateway builds the shared guards of f's policy. A nil global budget
// configuration means the scope's bucket stands alone. It returns a
// *retry.ConfigError for an invalid configuration.
func newGateway(f *File, global *retry.BudgetConfig, seed uint64) (*gateway, error) {
	if err := f.Policy.Validate(); err != nil {
		return nil, err
	}
	g := &gateway{policy: f.Policy, op: f.Operation, jitter: rand.New(rand.NewPCG(seed, jitterStream))}
	if f.Budget != nil {
		var globalCfg retry.BudgetConfig
		if global != nil {
			globalCfg = *global
		}
		budgets, err := retry.NewBudgets(*f.Budget, globalCfg)
		if err != nil {
			return nil, err
		}
		g.budget = budgets.For(simAccount, simMerchant)
	}
	if f.Breaker != nil {
		circuits, err := retry.NewCircuits(*f.Breaker)
		if err != nil {
			return nil, err
		}
		g.breaker = circuits.For(simAccount)
	}
	return g, nil
}

// The scope every simulated operation runs in: one processor account and
// one merchant.
const (
	simAccount  = "acct_sim"
	simMerchant = "merchant_sim"
)

// Streams of the seeded random sources, so jitter and faults never share
// draws.
const (
	jitterStream = 1
	faultStream  = 2
)

// start starts operation op's loop at now.
func (g *gateway) start(op int, now time.Time) loop {
	o := retry.Operation{
		Idempotent: g.op.Read(),
		Budget:     g.budget,
		Breaker:    g.breaker,
		Rand:       g.jitter,
	}
	if g.op.IdempotencyKey {
		o.IdempotencyKey = key(op)
	}
	run, err := retry.NewRun(now, g.policy, o)
	if err != nil {
		// newGateway validated the policy: NewRun cannot refuse it.
		panic("policysim: " + err.Error())
	}
	return &gatewayLoop{run: run, read: g.op.Read()}
}

// key returns the processor idempotency key of simulated operation op (from
// 0): "pg_op_1" for the first.
func key(op int) string {
	return "pg_op_" + strconv.Itoa(op+1)
}
