package retry

import (
	"context"
	"errors"
	"math"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// DefaultFleetSync is how often a Fleet syncs with the shared state: a circuit another
// replica opened is seen open here within about that time (well inside a second).
const DefaultFleetSync = 250 * time.Millisecond

// fleetSyncTimeout bounds one sync, so that a database that stopped answering holds the
// loop no longer than that.
const fleetSyncTimeout = 2 * time.Second

// FleetConfig shapes a Fleet.
type FleetConfig struct {
	// Scope and Global shape the shared buckets as they do a process's Budgets: one per
	// (processor account, merchant) under one global bucket, here for the whole fleet. A
	// zero Global means no global bucket.
	Scope, Global BudgetConfig
	// Breaker shapes each replica's circuits.
	Breaker BreakerConfig
	// SyncEvery is how often the replica syncs (DefaultFleetSync when zero).
	SyncEvery time.Duration
	// Replica names this replica in the shared rows, for operators.
	Replica string
	// Log receives the sync loop's failures and recoveries (none when nil).
	Log *zap.Logger
}

// Fleet is a retry budget and a set of circuit breakers shared by every replica of a
// fleet through a FleetStore, behind the same Budget and Breaker interfaces as the
// process-wide Budgets and Circuits.
//
// Every decision stays in memory: each replica leases retry tokens in small batches from
// the shared buckets and spends them locally, so Withdraw never waits on the network. A
// background loop (Run) syncs every FleetConfig.SyncEvery: it adds the replica's deposits
// to the shared buckets (each replica its own, so that no success counts twice), tops its
// leases up to what its recent retries need (at most a quarter of a bucket's burst, at
// least two tokens; at once when a lease runs out) and gives back what it holds beyond
// that. The floor accrues once, in
// the shared bucket, for the whole fleet. A replica that stops gives back its leases
// (Close); one that dies loses at most the tokens it held. A scope's first retry on a
// replica and the one after it are admitted on credit, owed to the shared bucket until the
// next sync pays them.
//
// Circuits decide locally on the replica's own answers, as Circuits do; when one opens,
// the replica writes until when, and every replica reads the open circuits at each sync
// and holds its own open until then, so an opening is seen by the whole fleet within a
// sync. Each replica then probes on its own.
//
// While the shared state cannot be reached, a replica spends what it holds and then
// refuses retries; its circuits keep deciding on its own answers. Fleet is safe for
// concurrent use; its time comes from the now arguments, as everywhere in this package,
// and Run alone reads the clock.
type Fleet struct {
	store    FleetStore
	cfg      FleetConfig
	log      *zap.Logger
	global   *lease // nil without a global bucket
	circuits *Circuits
	kick     chan struct{}

	mu     sync.RWMutex
	scopes map[scopeKey]*FleetBudget

	omu    sync.Mutex
	opened map[string]time.Time // circuits opened here and not yet written
	shared map[string]time.Time // circuits the fleet holds open, as of the last sync

	syncMu sync.Mutex // one sync at a time
	closed bool       // Close has given the leases back

	syncs, failures atomic.Uint64
}

var _ Budget = (*FleetBudget)(nil)

// NewFleet returns a fleet-wide budget and set of breakers on store, or a *ConfigError.
// Nothing is read or written before the first Sync.
func NewFleet(store FleetStore, cfg FleetConfig) (*Fleet, error) {
	if err := cfg.Scope.Validate(); err != nil {
		return nil, err
	}
	if cfg.SyncEvery <= 0 {
		cfg.SyncEvery = DefaultFleetSync
	}
	f := &Fleet{
		store:  store,
		cfg:    cfg,
		log:    cfg.Log,
		kick:   make(chan struct{}, 1),
		scopes: make(map[scopeKey]*FleetBudget),
		opened: make(map[string]time.Time),
		shared: make(map[string]time.Time),
	}
	if f.log == nil {
		f.log = nopLogger
	}
	if cfg.Global != (BudgetConfig{}) {
		if err := cfg.Global.validate("global_budget."); err != nil {
			return nil, err
		}
		f.global = newLease(cfg.Global, BucketSync{Global: true})
	}
	circuits, err := NewCircuits(cfg.Breaker)
	if err != nil {
		return nil, err
	}
	circuits.created = f.prepareCircuit
	f.circuits = circuits
	return f, nil
}

// Budget returns the budget of one processor account and merchant, creating it on first
// use (which asks for a sync at once).
func (f *Fleet) Budget(account, merchant string) Budget { return f.For(account, merchant) }

// For returns the *FleetBudget of one processor account and merchant, as Budget does.
func (f *Fleet) For(account, merchant string) *FleetBudget {
	k := scopeKey{account, merchant}
	f.mu.RLock()
	b, ok := f.scopes[k]
	f.mu.RUnlock()
	if ok {
		return b
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if b, ok := f.scopes[k]; ok {
		return b
	}
	b = &FleetBudget{scope: newLease(f.cfg.Scope, BucketSync{Account: account, Merchant: merchant}), global: f.global, wake: f.wake}
	f.scopes[k] = b
	f.wake()
	return b
}

// Breaker returns the circuit of a processor account, creating it on first use: open at
// once if the fleet holds it open.
func (f *Fleet) Breaker(account string) Breaker { return f.circuits.For(account) }

// Circuit returns the *Circuit of a processor account, as Breaker does.
func (f *Fleet) Circuit(account string) *Circuit { return f.circuits.For(account) }

// States returns the state at now of every account's circuit on this replica.
func (f *Fleet) States(now time.Time) map[string]BreakerState { return f.circuits.States(now) }

// prepareCircuit installs the fleet's hooks on a new circuit (with the Circuits' lock held).
func (f *Fleet) prepareCircuit(account string, c *Circuit) {
	c.opened = func(until time.Time) { f.noteOpened(account, until) }
	f.omu.Lock()
	c.held = f.shared[account]
	f.omu.Unlock()
	f.wake()
}

// noteOpened records that this replica opened an account's circuit, for the next sync,
// and asks for that sync now.
func (f *Fleet) noteOpened(account string, until time.Time) {
	f.omu.Lock()
	if until.After(f.opened[account]) {
		f.opened[account] = until
	}
	f.omu.Unlock()
	f.wake()
}

// wake asks the loop for a sync now, without waiting.
func (f *Fleet) wake() {
	select {
	case f.kick <- struct{}{}:
	default:
	}
}

// FleetStats counts a Fleet's syncs.
type FleetStats struct {
	// Syncs and Failures count the syncs made and those that failed.
	Syncs, Failures uint64
	// Leased is the retry tokens this replica holds, over all scopes; GlobalLeased those
	// of the global bucket.
	Leased, GlobalLeased float64
}

// Stats returns the fleet's counters and the tokens held now.
func (f *Fleet) Stats() FleetStats {
	s := FleetStats{Failures: f.failures.Load()} // first: a sync is counted before its failure
	s.Syncs = f.syncs.Load()
	for _, l := range f.leases() {
		l.mu.Lock()
		if l.sync.Global {
			s.GlobalLeased = l.have
		} else {
			s.Leased += l.have
		}
		l.mu.Unlock()
	}
	return s
}

// leases returns every lease: the global one first, then the scopes'.
func (f *Fleet) leases() []*lease {
	f.mu.RLock()
	defer f.mu.RUnlock()
	out := make([]*lease, 0, len(f.scopes)+1)
	if f.global != nil {
		out = append(out, f.global)
	}
	for _, b := range f.scopes {
		out = append(out, b.scope)
	}
	return out
}

// Sync makes one sync with the shared state at now: the deposits made since the last one,
// the leases to top up or give back, the circuits opened here; then it applies the grants
// and holds open the circuits the fleet holds open. On an error nothing is granted and the
// deposits sent are forgotten (see FleetStore); the openings are sent again next time.
func (f *Fleet) Sync(ctx context.Context, now time.Time) error {
	f.syncMu.Lock()
	defer f.syncMu.Unlock()
	return f.sync(ctx, now, f.closed)
}

func (f *Fleet) sync(ctx context.Context, now time.Time, closing bool) error {
	s := FleetSync{Now: now, Replica: f.cfg.Replica}
	var synced []*lease
	for _, l := range f.leases() {
		if b, ok := l.prepare(closing); ok {
			s.Buckets = append(s.Buckets, b)
			synced = append(synced, l)
		}
	}
	f.omu.Lock()
	for account, until := range f.opened {
		s.Opened = append(s.Opened, CircuitOpening{Account: account, Until: until})
	}
	clear(f.opened)
	f.omu.Unlock()
	sort.Slice(s.Opened, func(i, j int) bool { return s.Opened[i].Account < s.Opened[j].Account })

	f.syncs.Add(1)
	res, err := f.store.SyncFleet(ctx, s)
	if err == nil && len(res.Granted) != len(s.Buckets) {
		err = errors.New("retry: fleet sync answered another number of buckets than it was asked")
	}
	if err != nil {
		f.failures.Add(1)
		for _, l := range synced {
			l.failed()
		}
		f.omu.Lock()
		for _, o := range s.Opened {
			if o.Until.After(f.opened[o.Account]) {
				f.opened[o.Account] = o.Until
			}
		}
		f.omu.Unlock()
		return err
	}
	for i, l := range synced {
		l.apply(res.Granted[i])
	}
	f.omu.Lock()
	clear(f.shared)
	for account, until := range res.Open {
		f.shared[account] = until
	}
	f.omu.Unlock()
	// A circuit the fleet holds open exists here too from now on, open, even before this
	// replica sends anything to that account.
	for account, until := range res.Open {
		f.circuits.For(account).holdOpen(until)
	}
	return nil
}

// Close gives back every token this replica holds (and pays what it owes) in one last
// sync at now; afterwards the budgets refuse every retry. A replica calls it when it stops,
// once nothing retries any more. Its error is the sync's: the tokens are then lost, as in
// a crash.
func (f *Fleet) Close(ctx context.Context, now time.Time) error {
	f.syncMu.Lock()
	defer f.syncMu.Unlock()
	f.closed = true
	return f.sync(ctx, now, true)
}

// Run syncs every FleetConfig.SyncEvery, and at once (but at most five times a period) when
// a new scope or circuit appears or a circuit opens here, until ctx ends. It logs the
// first failure of a series and the recovery.
func (f *Fleet) Run(ctx context.Context) {
	tick := time.NewTicker(f.cfg.SyncEvery)
	defer tick.Stop()
	gap := time.NewTimer(0)
	defer gap.Stop()
	failing := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		case <-f.kick:
		}
		sctx, cancel := context.WithTimeout(ctx, fleetSyncTimeout)
		err := f.Sync(sctx, time.Now())
		cancel()
		switch {
		case err != nil && ctx.Err() != nil:
			return
		case err != nil:
			if failing == 0 {
				f.log.Warn("fleet sync failed: spending the leases held, then refusing retries", zap.Error(err))
			}
			failing++
		case failing > 0:
			f.log.Info("fleet sync recovered", zap.Int("failed_syncs", failing))
			failing = 0
		}
		gap.Reset(f.cfg.SyncEvery / 5)
		select {
		case <-ctx.Done():
			return
		case <-gap.C:
		}
	}
}

// FleetBudget is the Budget of one scope of a Fleet: the tokens this replica leased from
// the scope's shared bucket, under those it leased from the global one. Its token counts
// are this replica's: the smaller of the two leases.
type FleetBudget struct {
	scope  *lease
	global *lease // nil without a global bucket
	wake   func() // asks for a sync now
}

func (b *FleetBudget) lock() {
	b.scope.mu.Lock()
	if b.global != nil {
		b.global.mu.Lock()
	}
}

func (b *FleetBudget) unlock() {
	if b.global != nil {
		b.global.mu.Unlock()
	}
	b.scope.mu.Unlock()
}

func (b *FleetBudget) level() float64 {
	l := b.scope.have
	if b.global != nil {
		l = min(l, b.global.have)
	}
	return l
}

// Withdraw spends one token of each lease when both hold one; otherwise it refuses at once.
// Either way the retry counts as demand, which sizes the next leases. Spending the last
// token of a lease asks for a sync at once, to top it up before the next retry, and so does
// a refusal by a lease whose shared bucket had enough at the last sync (not one the shared
// bucket left short: in an outage, refusals do not make a replica sync more often).
func (b *FleetBudget) Withdraw(time.Time) Grant {
	b.lock()
	defer b.unlock()
	b.scope.asked++
	if b.global != nil {
		b.global.asked++
	}
	g := Grant{Before: b.level()}
	if g.Before > 1-admitEpsilon {
		b.scope.have = max(b.scope.have-1, 0)
		if b.global != nil {
			b.global.have = max(b.global.have-1, 0)
		}
		g.Admitted = true
	}
	g.After = b.level()
	if b.wake != nil && (g.Admitted && g.After < 1-admitEpsilon || !g.Admitted && b.refillable()) {
		b.wake()
	}
	return g
}

// refillable reports whether every empty lease of b may be topped up by a sync now: its
// shared bucket granted all it was asked at the last sync. Called with both locks held.
func (b *FleetBudget) refillable() bool {
	for _, l := range []*lease{b.scope, b.global} {
		if l != nil && l.have < 1-admitEpsilon && l.short {
			return false
		}
	}
	return true
}

// Deposit records a successful call: its fraction of a token goes to the shared buckets at
// the next sync.
func (b *FleetBudget) Deposit(time.Time) {
	b.lock()
	defer b.unlock()
	b.scope.credit += b.scope.cfg.Ratio
	if b.global != nil {
		b.global.credit += b.global.cfg.Ratio
	}
}

// Tokens returns the tokens this replica may spend now: the smaller of its two leases.
func (b *FleetBudget) Tokens(time.Time) float64 {
	b.lock()
	defer b.unlock()
	return b.level()
}

// lease is what one replica holds of one shared bucket. Its fields are guarded by mu.
type lease struct {
	mu     sync.Mutex
	cfg    BudgetConfig
	sync   BucketSync // the bucket's name
	have   float64    // whole tokens on hand
	debt   float64    // tokens spent before they were leased, owed to the shared bucket
	credit float64    // deposits since the last sync
	asked  float64    // retries asked for since the last sync
	demand float64    // retries asked for per sync, smoothed
	want   float64    // what the sync in progress asked for
	short  bool       // the last sync granted less than it asked for
}

// newLease starts with its least lease (minLease) on credit, so that the first retries of a
// scope, an operation's two in a row, need not wait for a sync: a replica that has just
// started, or a scope that has just appeared, retries as a quiet one does.
func newLease(cfg BudgetConfig, name BucketSync) *lease {
	l := &lease{cfg: cfg, sync: name}
	l.have = l.minLease()
	l.debt = l.have
	return l
}

// maxLease is the most a replica holds of a bucket: a quarter of its burst, at least one
// token, so that a few replicas never hold the whole stock and one that dies loses little.
func (l *lease) maxLease() float64 { return max(1, math.Floor(l.cfg.Burst/4)) }

// minLease is the least a replica asks to hold of a bucket: two tokens (one when the
// burst is small), so that a quiet scope retries twice in a row without waiting for a sync.
func (l *lease) minLease() float64 { return min(2, l.maxLease()) }

// prepare takes the bucket's part of a sync: its deposits, what it gives back, what it
// wants. A lease is sized for twice its recent demand per sync, between minLease and
// maxLease; what it holds beyond that (by more than a token) goes back. Closing gives
// everything back. ok is false when there is nothing to send.
func (l *lease) prepare(closing bool) (BucketSync, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.demand = (l.demand + l.asked) / 2
	l.asked = 0
	target := min(max(math.Ceil(2*l.demand), l.minLease()), l.maxLease())
	slack := 1.0
	if closing {
		target, slack = 0, 0
	}
	var back float64
	if l.have > target+slack {
		back = math.Floor(l.have - target)
		l.have -= back
	}
	b := l.sync
	b.Burst, b.MinPerSec = l.cfg.Burst, l.cfg.MinPerSec
	b.Credit = l.credit + back
	b.Want = math.Ceil(max(target-l.have, 0) + l.debt)
	l.credit, l.want = 0, b.Want
	return b, b.Credit > 0 || b.Want > 0
}

// failed records a sync that could not reach the shared bucket: nothing was granted.
func (l *lease) failed() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.short = l.want > 0
}

// apply adds a grant: it pays the debt first.
func (l *lease) apply(granted float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.short = granted < l.want
	pay := min(granted, l.debt)
	l.debt -= pay
	l.have += granted - pay
}
