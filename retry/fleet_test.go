package retry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"
)

// memFleet is a FleetStore in memory, with the shared rows' semantics of BucketSync.Lease:
// the replicas of a test share one.
type memFleet struct {
	mu      sync.Mutex
	rows    map[BucketSync]BucketRow // keyed by the bucket's name alone
	open    map[string]time.Time
	fail    error // when set, every sync fails with it (nothing applied)
	lastNow time.Time
}

func newMemFleet() *memFleet {
	return &memFleet{rows: make(map[BucketSync]BucketRow), open: make(map[string]time.Time)}
}

func bucketName(b BucketSync) BucketSync {
	return BucketSync{Global: b.Global, Account: b.Account, Merchant: b.Merchant}
}

func (m *memFleet) SyncFleet(_ context.Context, s FleetSync) (FleetShared, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.fail != nil {
		return FleetShared{}, m.fail
	}
	m.lastNow = s.Now
	res := FleetShared{Granted: make([]float64, len(s.Buckets)), Open: map[string]time.Time{}}
	for i, b := range s.Buckets {
		k := bucketName(b)
		row, ok := m.rows[k]
		if !ok {
			row = b.NewBucketRow(s.Now)
		}
		m.rows[k], res.Granted[i] = b.Lease(row, s.Now)
	}
	for _, o := range s.Opened {
		if o.Until.After(m.open[o.Account]) {
			m.open[o.Account] = o.Until
		}
	}
	for a, until := range m.open {
		if until.After(s.Now) {
			res.Open[a] = until
		}
	}
	return res, nil
}

// tokens returns the shared stock of a bucket (the global one when merchant is "").
func (m *memFleet) tokens(account, merchant string) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.rows[BucketSync{Global: merchant == "", Account: account, Merchant: merchant}].Tokens
}

func newFleetT(t testing.TB, store FleetStore, scope, global BudgetConfig) *Fleet {
	t.Helper()
	f, err := NewFleet(store, FleetConfig{Scope: scope, Global: global, Breaker: DefaultBreakerConfig()})
	if err != nil {
		t.Fatalf("NewFleet: got error %v, want nil", err)
	}
	return f
}

func syncT(t testing.TB, f *Fleet, now time.Time) {
	t.Helper()
	if err := f.Sync(context.Background(), now); err != nil {
		t.Fatalf("Sync: got error %v, want nil", err)
	}
}

func TestBucketLease(t *testing.T) {
	t.Parallel()
	cfg := BucketSync{Burst: 20, MinPerSec: 1}
	tests := []struct {
		name        string
		row         BucketRow
		now         time.Time
		credit      float64
		want        float64
		wantTokens  float64
		wantGranted float64
		wantAt      time.Time
	}{
		{"grants what it holds", BucketRow{Tokens: 3, AccruedAt: t0}, t0, 0, 5, 0, 3, t0},
		{"whole tokens only", BucketRow{Tokens: 2.5, AccruedAt: t0}, t0, 0, 5, 0.5, 2, t0},
		{"the floor accrues", BucketRow{Tokens: 0, AccruedAt: t0}, t0.Add(1500 * time.Millisecond), 0, 5, 0.5, 1, t0.Add(1500 * time.Millisecond)},
		{"a clock behind accrues nothing", BucketRow{Tokens: 0.5, AccruedAt: t0}, t0.Add(-time.Second), 0, 5, 0.5, 0, t0},
		{"credit adds, capped at the burst", BucketRow{Tokens: 19, AccruedAt: t0}, t0, 3, 0, 20, 0, t0},
		{"deposits that reach a token", BucketRow{Tokens: 0.85, AccruedAt: t0}, t0, 0.15, 1, 0, 1, t0},
		{"nothing wanted", BucketRow{Tokens: 4, AccruedAt: t0}, t0, 0, 0, 4, 0, t0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := cfg
			b.Credit, b.Want = tt.credit, tt.want
			row, granted := b.Lease(tt.row, tt.now)
			if math.Abs(row.Tokens-tt.wantTokens) > 1e-9 || granted != tt.wantGranted || !row.AccruedAt.Equal(tt.wantAt) {
				t.Errorf("got %v tokens, %v granted, accrued at %v; want %v, %v, %v",
					row.Tokens, granted, row.AccruedAt, tt.wantTokens, tt.wantGranted, tt.wantAt)
			}
		})
	}
}

// outage drives replicas through a full outage on a fake clock: every replica asks for a
// retry every step and syncs every sync period. It returns the retries admitted.
func outage(t *testing.T, budgets []Budget, syncs func(now time.Time), d, step, syncEvery time.Duration) int {
	t.Helper()
	admitted := 0
	nextSync := t0
	for now := t0; now.Before(t0.Add(d)); now = now.Add(step) {
		if !now.Before(nextSync) {
			syncs(now)
			nextSync = nextSync.Add(syncEvery)
		}
		for _, b := range budgets {
			if b.Withdraw(now).Admitted {
				admitted++
			}
		}
	}
	return admitted
}

// TestFleetOneBudget: replicas retrying through a full outage spend one budget between
// them, the burst and the floor once, where replicas with their own budgets spend one
// each.
func TestFleetOneBudget(t *testing.T) {
	t.Parallel()
	scope, global := DefaultScopeBudget(), DefaultGlobalBudget()
	const d = 30 * time.Second
	oneBudget := scope.Burst + d.Seconds()*scope.MinPerSec // 50
	for _, n := range []int{1, 3, 5} {
		t.Run(fmt.Sprintf("%d replicas", n), func(t *testing.T) {
			t.Parallel()
			store := newMemFleet()
			var fleets []*Fleet
			var budgets []Budget
			for range n {
				f := newFleetT(t, store, scope, global)
				fleets = append(fleets, f)
				budgets = append(budgets, f.Budget("acct", "m"))
			}
			got := outage(t, budgets, func(now time.Time) {
				for _, f := range fleets {
					syncT(t, f, now)
				}
			}, d, 10*time.Millisecond, DefaultFleetSync)
			// At most the one budget, plus the first retry each replica takes on credit
			// (paid back from the shared bucket, so it is in the budget already) and the
			// floor's last fraction.
			if float64(got) > oneBudget+1 {
				t.Errorf("fleet of %d admitted %d retries, want at most %v (one budget)", n, got, oneBudget+1)
			}
			if float64(got) < oneBudget-2 {
				t.Errorf("fleet of %d admitted %d retries, want about %v: the fleet gets the floor", n, got, oneBudget)
			}

			// The same replicas, each with its own budget, as PAYGATE_BUDGET_SCOPE=process.
			var own []Budget
			for range n {
				bs, err := NewBudgets(scope, global)
				if err != nil {
					t.Fatal(err)
				}
				own = append(own, bs.For("acct", "m"))
			}
			if got := outage(t, own, func(time.Time) {}, d, 10*time.Millisecond, DefaultFleetSync); float64(got) < float64(n)*(oneBudget-1) {
				t.Errorf("%d process budgets admitted %d retries, want about %v each", n, got, oneBudget)
			}
		})
	}
}

// TestFleetDepositsCountOnce: deposits reach the shared bucket once each, however many
// replicas report them and however many syncs they take.
func TestFleetDepositsCountOnce(t *testing.T) {
	t.Parallel()
	store := newMemFleet()
	cfg := BudgetConfig{Ratio: 0.25, MinPerSec: 0, Burst: 100}
	a, b := newFleetT(t, store, cfg, BudgetConfig{}), newFleetT(t, store, cfg, BudgetConfig{})
	a.Budget("acct", "m")
	b.Budget("acct", "m")
	syncT(t, a, t0) // the bucket is created full: each pays for its first retry, then drains it
	syncT(t, b, t0)
	for a.Budget("acct", "m").Withdraw(t0).Admitted {
		syncT(t, a, t0)
	}
	syncT(t, b, t0)
	for b.Budget("acct", "m").Withdraw(t0).Admitted {
		syncT(t, b, t0)
	}
	base := store.tokens("acct", "m")
	for range 8 {
		a.Budget("acct", "m").Deposit(t0)
		b.Budget("acct", "m").Deposit(t0)
	}
	for range 3 { // syncs with nothing new add nothing
		syncT(t, a, t0)
		syncT(t, b, t0)
	}
	held := a.Stats().Leased + b.Stats().Leased
	if got := store.tokens("acct", "m") + held - base; math.Abs(got-4) > 1e-9 {
		t.Errorf("16 deposits of 0.25: got %v tokens more in the fleet, want 4", got)
	}
}

// TestFleetLeases: what a replica holds, gives back and loses.
func TestFleetLeases(t *testing.T) {
	t.Parallel()
	scope := BudgetConfig{Ratio: 0.15, MinPerSec: 0, Burst: 20}
	t.Run("the first two retries are on credit, paid at the first sync", func(t *testing.T) {
		t.Parallel()
		store := newMemFleet()
		f := newFleetT(t, store, scope, BudgetConfig{})
		for i, want := range []Grant{{Admitted: true, Before: 2, After: 1}, {Admitted: true, Before: 1, After: 0}, {Before: 0, After: 0}} {
			if g := f.Budget("acct", "m").Withdraw(t0); g != want {
				t.Fatalf("retry %d before any sync: got %+v, want %+v", i+1, g, want)
			}
		}
		syncT(t, f, t0)
		if got, held := store.tokens("acct", "m"), f.Stats().Leased; got+held != 18 {
			t.Errorf("after the first sync: got %v shared + %v held, want 18 (20 less the retries on credit)", got, held)
		}
	})
	t.Run("a scope with a burst of 4 or less has one retry on credit", func(t *testing.T) {
		t.Parallel()
		f := newFleetT(t, newMemFleet(), BudgetConfig{Ratio: 0.15, Burst: 3}, BudgetConfig{})
		if g := f.Budget("acct", "m").Withdraw(t0); !g.Admitted || g.Before != 1 || g.After != 0 {
			t.Fatalf("first retry before any sync: got %+v, want admitted 1 → 0", g)
		}
		if g := f.Budget("acct", "m").Withdraw(t0); g.Admitted {
			t.Fatalf("second retry before any sync: got %+v, want refused", g)
		}
	})
	t.Run("a lease is sized by demand and capped at a quarter of the burst", func(t *testing.T) {
		t.Parallel()
		store := newMemFleet()
		f := newFleetT(t, store, BudgetConfig{Ratio: 0.15, MinPerSec: 100, Burst: 20}, BudgetConfig{})
		b := f.Budget("acct", "m")
		now := t0
		for range 10 {
			syncT(t, f, now)
			for range 20 {
				b.Withdraw(now)
			}
			now = now.Add(DefaultFleetSync)
		}
		syncT(t, f, now)
		if held := f.Stats().Leased; held != 5 {
			t.Errorf("a busy replica holds %v, want 5 (burst 20 / 4)", held)
		}
		for range 10 { // demand stops: the lease shrinks to two tokens, and one of slack
			now = now.Add(DefaultFleetSync)
			syncT(t, f, now)
		}
		if held := f.Stats().Leased; held > 3 {
			t.Errorf("an idle replica holds %v, want at most 3", held)
		}
	})
	t.Run("close gives the lease back; a crash loses at most the lease", func(t *testing.T) {
		t.Parallel()
		store := newMemFleet()
		crashed, stopped := newFleetT(t, store, scope, BudgetConfig{}), newFleetT(t, store, scope, BudgetConfig{})
		now := t0
		for range 6 {
			for _, f := range []*Fleet{crashed, stopped} {
				syncT(t, f, now)
				for range 3 {
					if !f.Budget("acct", "m").Withdraw(now).Admitted {
						break
					}
				}
			}
			now = now.Add(DefaultFleetSync)
		}
		for _, f := range []*Fleet{crashed, stopped} {
			syncT(t, f, now)
		}
		before := store.tokens("acct", "m")
		held := stopped.Stats().Leased
		if err := stopped.Close(context.Background(), now); err != nil {
			t.Fatal(err)
		}
		if got := store.tokens("acct", "m"); got != before+held {
			t.Errorf("after Close: got %v shared, want %v + the %v held", got, before, held)
		}
		if g := stopped.Budget("acct", "m").Withdraw(now); g.Admitted {
			t.Errorf("a closed fleet admitted a retry: %+v", g)
		}
		if lost := crashed.Stats().Leased; lost > 5 {
			t.Errorf("the crashed replica held %v, want at most its lease of 5", lost)
		}
	})
	t.Run("a failed sync grants nothing and forgets its deposits", func(t *testing.T) {
		t.Parallel()
		store := newMemFleet()
		f := newFleetT(t, store, BudgetConfig{Ratio: 1, MinPerSec: 0, Burst: 20}, BudgetConfig{})
		b := f.Budget("acct", "m")
		syncT(t, f, t0)
		drain(b, t0)
		for b.Withdraw(t0).Admitted || store.tokens("acct", "m") >= 1 {
			syncT(t, f, t0)
			drain(b, t0)
		}
		b.Deposit(t0)
		b.Deposit(t0)
		store.mu.Lock()
		store.fail = errors.New("connection reset during COMMIT")
		store.mu.Unlock()
		if err := f.Sync(context.Background(), t0); err == nil {
			t.Fatal("Sync: got nil, want the store's error")
		}
		store.mu.Lock()
		store.fail = nil
		store.mu.Unlock()
		syncT(t, f, t0)
		if got := store.tokens("acct", "m") + f.Stats().Leased; got != 0 {
			t.Errorf("after a failed sync: got %v tokens, want 0 (its deposits may have committed: never sent twice)", got)
		}
	})
}

// TestFleetAsksForASync: spending a lease's last token asks for a sync at once, and so does
// a refusal while the shared bucket has tokens; a refusal by a bucket the last sync left
// short (an outage) does not, so that refusals do not make a replica sync more often.
func TestFleetAsksForASync(t *testing.T) {
	t.Parallel()
	kicked := func(f *Fleet) bool {
		select {
		case <-f.kick:
			return true
		default:
			return false
		}
	}
	tests := []struct {
		name  string
		burst float64
		want  bool
	}{
		{"the shared bucket has more", 20, true},
		{"the shared bucket is empty", 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newFleetT(t, newMemFleet(), BudgetConfig{Ratio: 0.15, MinPerSec: 0, Burst: tt.burst}, BudgetConfig{})
			b := f.Budget("acct", "m")
			for range 3 { // the small bucket holds two tokens: its third sync finds it empty
				syncT(t, f, t0)
				for b.Withdraw(t0).Admitted {
				}
			}
			kicked(f)
			b.Withdraw(t0) // refused
			if got := kicked(f); got != tt.want {
				t.Errorf("a refusal asked for a sync: got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestFleetBreaker: a circuit one replica opens is held open on the others from their next
// sync until the time it wrote, and each then probes on its own.
func TestFleetBreaker(t *testing.T) {
	t.Parallel()
	store := newMemFleet()
	cfg := DefaultBreakerConfig()
	a := newFleetT(t, store, DefaultScopeBudget(), DefaultGlobalBudget())
	b := newFleetT(t, store, DefaultScopeBudget(), DefaultGlobalBudget())
	late := newFleetT(t, store, DefaultScopeBudget(), DefaultGlobalBudget())
	ca, cb := a.Circuit("acct"), b.Circuit("acct")
	now := t0
	for range cfg.ConsecutiveFailures {
		tk, ok := ca.Allow(now)
		if !ok {
			t.Fatal("a closed circuit refused an attempt")
		}
		ca.Done(now, tk, HealthFailure)
	}
	until := now.Add(cfg.OpenFor)
	if got := ca.OpenUntil(now); !got.Equal(until) {
		t.Fatalf("replica a: open until %v, want %v", got, until)
	}
	if _, ok := cb.Allow(now); !ok {
		t.Fatal("replica b refused before any sync: it has seen nothing yet")
	}
	now = now.Add(100 * time.Millisecond)
	syncT(t, a, now)
	syncT(t, b, now)
	syncT(t, late, now)
	tests := []struct {
		name string
		c    *Circuit
	}{{"replica b", cb}, {"replica whose circuit appears after the sync", late.Circuit("acct")}}
	for _, tt := range tests {
		if got := tt.c.State(now); got != BreakerOpen {
			t.Errorf("%s after its sync: got %s, want open", tt.name, got)
		}
		if got := tt.c.OpenUntil(now); !got.Equal(until) {
			t.Errorf("%s: open until %v, want %v (replica a's)", tt.name, got, until)
		}
		if _, ok := tt.c.Allow(until); !ok {
			t.Errorf("%s at %v: refused, want a probe admitted", tt.name, until)
		}
	}
	if got := b.States(now)["acct"]; got != BreakerOpen {
		t.Errorf("States: got %s, want open", got)
	}
}

// BenchmarkFleetBudgetWithdraw measures one retry decision of a fleet-wide budget,
// amortising a sync (on an in-memory store) every thousand decisions: the decision itself
// touches memory only.
func BenchmarkFleetBudgetWithdraw(b *testing.B) {
	store := newMemFleet()
	f := newFleetT(b, store, DefaultScopeBudget(), DefaultGlobalBudget())
	s := f.Budget("acct", "merchant")
	now := t0
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(time.Millisecond)
		s.Withdraw(now)
		if n++; n%1000 == 0 {
			_ = f.Sync(context.Background(), now)
		}
	}
}

// BenchmarkFleetBudgetWithdrawParallel measures decisions contended on one scope.
func BenchmarkFleetBudgetWithdrawParallel(b *testing.B) {
	f := newFleetT(b, newMemFleet(), DefaultScopeBudget(), DefaultGlobalBudget())
	s := f.Budget("acct", "merchant")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			s.Withdraw(t0)
		}
	})
}
