package store_test

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/dbtest"
	"github.com/paygate/paygate/retry"
	"github.com/paygate/paygate/store"
)

// fleetDB opens a database of the test's own: the fleet's global bucket is one row for
// everything on a database.
func fleetDB(t testing.TB) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), dbtest.NewDatabase(t), store.Config{MaxConns: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	return db
}

func newFleets(t testing.TB, db *store.DB, n int) []*retry.Fleet {
	t.Helper()
	var out []*retry.Fleet
	for i := range n {
		f, err := retry.NewFleet(db, retry.FleetConfig{Scope: retry.DefaultScopeBudget(), Global: retry.DefaultGlobalBudget(),
			Breaker: retry.DefaultBreakerConfig(), Replica: fmt.Sprintf("replica-%d", i)})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	return out
}

// syncAll syncs every replica at once, as replicas do.
func syncAll(t *testing.T, fleets []*retry.Fleet, now time.Time) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, len(fleets))
	for i, f := range fleets {
		wg.Go(func() { errs[i] = f.Sync(context.Background(), now) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: Sync: got error %v, want nil", i, err)
		}
	}
}

// TestFleetOneBudgetOnPostgres: three replicas syncing concurrently with one database
// through a full outage retry within one budget between them: the scope's burst and its
// floor once, where three process budgets would allow three times that.
func TestFleetOneBudgetOnPostgres(t *testing.T) {
	t.Parallel()
	db := fleetDB(t)
	fleets := newFleets(t, db, 3)
	scope := retry.DefaultScopeBudget()
	const d = 30 * time.Second
	oneBudget := scope.Burst + d.Seconds()*scope.MinPerSec
	t0 := time.Date(2026, time.March, 2, 12, 0, 0, 0, time.UTC)
	admitted := 0
	next := t0
	for now := t0; now.Before(t0.Add(d)); now = now.Add(10 * time.Millisecond) {
		if !now.Before(next) {
			syncAll(t, fleets, now)
			next = next.Add(retry.DefaultFleetSync)
		}
		for _, f := range fleets {
			if f.Budget("acct_fleet", "m_fleet").Withdraw(now).Admitted {
				admitted++
			}
		}
	}
	if float64(admitted) > oneBudget+1 || float64(admitted) < oneBudget-2 {
		t.Errorf("three replicas admitted %d retries in %v of outage, want about %v (one budget), at most %v", admitted, d, oneBudget, oneBudget+1)
	}
}

// TestFleetDepositsOnPostgres: replicas depositing and syncing concurrently add each
// success once to the shared bucket.
func TestFleetDepositsOnPostgres(t *testing.T) {
	t.Parallel()
	db := fleetDB(t)
	fleets := newFleets(t, db, 3)
	t0 := time.Date(2026, time.March, 2, 12, 0, 0, 0, time.UTC)
	now := t0
	// Drain the scope through the replicas (no floor accrues: the clock stands still).
	for range 30 {
		syncAll(t, fleets, now)
		for _, f := range fleets {
			for f.Budget("acct_dep", "m_dep").Withdraw(now).Admitted {
			}
		}
	}
	var wg sync.WaitGroup
	for _, f := range fleets {
		wg.Go(func() {
			for i := range 40 { // 40 × 0.15 = 6 tokens per replica
				f.Budget("acct_dep", "m_dep").Deposit(now)
				if i%10 == 0 {
					_ = f.Sync(context.Background(), now)
				}
			}
		})
	}
	wg.Wait()
	syncAll(t, fleets, now)
	var shared float64
	if err := db.Pool().QueryRow(context.Background(),
		`SELECT tokens FROM fleet_budgets WHERE kind = 'scope' AND account = 'acct_dep' AND merchant = 'm_dep'`).Scan(&shared); err != nil {
		t.Fatal(err)
	}
	held := 0.0
	for _, f := range fleets {
		held += f.Stats().Leased
	}
	if got := shared + held; math.Abs(got-18) > 1e-6 {
		t.Errorf("120 deposits of 0.15 over three replicas: got %v tokens (%v shared, %v held), want 18", got, shared, held)
	}
}

// TestFleetBreakerOnPostgres: an opening written by one replica is held open by another
// from its next sync, even one that syncs nothing else.
func TestFleetBreakerOnPostgres(t *testing.T) {
	t.Parallel()
	db := fleetDB(t)
	fleets := newFleets(t, db, 2)
	t0 := time.Date(2026, time.March, 2, 12, 0, 0, 0, time.UTC)
	a, b := fleets[0].Circuit("acct_brk"), fleets[1].Circuit("acct_brk")
	syncAll(t, fleets, t0) // b now has nothing left to write: its next sync only reads
	for range retry.DefaultBreakerConfig().ConsecutiveFailures {
		tk, _ := a.Allow(t0)
		a.Done(t0, tk, retry.HealthFailure)
	}
	until := a.OpenUntil(t0)
	if until.IsZero() {
		t.Fatal("replica a did not open")
	}
	now := t0.Add(100 * time.Millisecond)
	syncAll(t, fleets[:1], now)
	syncAll(t, fleets[1:], now)
	if got := b.OpenUntil(now); !got.Equal(until) {
		t.Errorf("replica b: open until %v, want %v", got, until)
	}
	var by string
	if err := db.Pool().QueryRow(context.Background(), `SELECT opened_by FROM fleet_breakers WHERE account = 'acct_brk'`).Scan(&by); err != nil || by != "replica-0" {
		t.Errorf("opened_by: got %q (%v), want replica-0", by, err)
	}
}

// BenchmarkFleetSync measures one replica's sync with the database: a deposit and a lease
// of one scope and the global bucket, and the open circuits read. It is paid every
// DefaultFleetSync, off every request's path.
func BenchmarkFleetSync(b *testing.B) {
	db := fleetDB(b)
	f := newFleets(b, db, 1)[0]
	budget := f.Budget("acct_bench", "m_bench")
	now := time.Date(2026, time.March, 2, 12, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		now = now.Add(retry.DefaultFleetSync)
		budget.Deposit(now)
		budget.Withdraw(now)
		if err := f.Sync(context.Background(), now); err != nil {
			b.Fatal(err)
		}
	}
}
