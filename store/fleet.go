package store

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/retry"
)

var _ retry.FleetStore = (*DB)(nil)

// The kinds of fleet_budgets rows.
const (
	fleetKindGlobal = "global"
	fleetKindScope  = "scope"
)

// fleetEnsureBuckets creates the buckets no replica named before, full (retry's
// NewBucketRow), in the order given: every sync sorts its buckets, so that two replicas
// creating the same ones never wait on each other in opposite orders.
const fleetEnsureBuckets = `
INSERT INTO fleet_budgets (kind, account, merchant, tokens, burst, min_per_sec, accrued_at, updated_by)
SELECT i.kind, i.account, i.merchant, i.tokens, i.burst, i.min_per_sec, i.accrued_at, $7
  FROM unnest($1::text[], $2::text[], $3::text[], $4::float8[], $5::float8[], $6::float8[], $8::timestamptz[])
       WITH ORDINALITY AS i(kind, account, merchant, tokens, burst, min_per_sec, accrued_at, n)
 ORDER BY i.n
    ON CONFLICT (kind, account, merchant) DO NOTHING`

// fleetLockBuckets reads and locks the buckets of a sync, in key order.
const fleetLockBuckets = `
SELECT b.kind, b.account, b.merchant, b.tokens, b.accrued_at
  FROM fleet_budgets b
  JOIN unnest($1::text[], $2::text[], $3::text[]) AS i(kind, account, merchant) USING (kind, account, merchant)
 ORDER BY b.kind, b.account, b.merchant
   FOR UPDATE OF b`

// fleetUpdateBuckets writes the buckets' new stock.
const fleetUpdateBuckets = `
UPDATE fleet_budgets b
   SET tokens = i.tokens, accrued_at = i.accrued_at, burst = i.burst, min_per_sec = i.min_per_sec,
       updated_at = now(), updated_by = $8
  FROM unnest($1::text[], $2::text[], $3::text[], $4::float8[], $5::timestamptz[], $6::float8[], $7::float8[])
       AS i(kind, account, merchant, tokens, accrued_at, burst, min_per_sec)
 WHERE (b.kind, b.account, b.merchant) = (i.kind, i.account, i.merchant)`

// fleetOpenCircuits moves the open-until time of each account forward, never back.
const fleetOpenCircuits = `
INSERT INTO fleet_breakers (account, open_until, opened_at, opened_by)
SELECT o.account, o.open_until, $3, $4
  FROM unnest($1::text[], $2::timestamptz[]) WITH ORDINALITY AS o(account, open_until, n)
 ORDER BY o.n
    ON CONFLICT (account) DO UPDATE
   SET open_until = EXCLUDED.open_until, opened_at = EXCLUDED.opened_at, opened_by = EXCLUDED.opened_by
 WHERE fleet_breakers.open_until < EXCLUDED.open_until`

// fleetOpenBreakers lists the circuits the fleet holds open after a time.
const fleetOpenBreakers = `SELECT account, open_until FROM fleet_breakers WHERE open_until > $1`

type fleetKey struct{ kind, account, merchant string }

func keyOf(b retry.BucketSync) fleetKey {
	if b.Global {
		return fleetKey{kind: fleetKindGlobal}
	}
	return fleetKey{fleetKindScope, b.Account, b.Merchant}
}

func compareKeys(a, b fleetKey) int {
	return cmp.Or(cmp.Compare(a.kind, b.kind), cmp.Compare(a.account, b.account), cmp.Compare(a.merchant, b.merchant))
}

// SyncFleet implements retry.FleetStore on the fleet_budgets and fleet_breakers tables, in
// one transaction: the sync's buckets are created if new, locked in key order, changed as
// retry.BucketSync.Lease says on the sync's clock, and written back; its openings move
// their accounts' open-until times forward. A sync with nothing to write only reads the
// open circuits. Errors are the store's (ErrUnavailable when the database cannot be
// reached); the caller then counts on nothing it sent.
func (db *DB) SyncFleet(ctx context.Context, s retry.FleetSync) (retry.FleetShared, error) {
	if len(s.Buckets) == 0 && len(s.Opened) == 0 {
		open, err := fleetOpen(ctx, db.pool, s.Now)
		return retry.FleetShared{Granted: []float64{}, Open: open}, interpretError(err)
	}
	// Locks are taken in key order, so that replicas syncing the same buckets queue
	// instead of deadlocking.
	order := make([]int, len(s.Buckets))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return compareKeys(keyOf(s.Buckets[a]), keyOf(s.Buckets[b])) })
	n := len(order)
	var (
		kinds, accounts, merchants = make([]string, n), make([]string, n), make([]string, n)
		tokens, bursts, floors     = make([]float64, n), make([]float64, n), make([]float64, n)
		accrued                    = make([]time.Time, n)
		index                      = make(map[fleetKey]int, n) // key → position in s.Buckets
		pos                        = make([]int, n)            // position in s.Buckets → in the arrays
	)
	for j, i := range order {
		pos[i] = j
		b := s.Buckets[i]
		k := keyOf(b)
		if _, dup := index[k]; dup {
			return retry.FleetShared{}, fmt.Errorf("store: fleet sync names bucket %v twice", k)
		}
		index[k] = i
		kinds[j], accounts[j], merchants[j] = k.kind, k.account, k.merchant
		row := b.NewBucketRow(s.Now)
		tokens[j], bursts[j], floors[j], accrued[j] = row.Tokens, b.Burst, b.MinPerSec, row.AccruedAt
	}
	var res retry.FleetShared
	err := db.InTx(ctx, func(tx pgx.Tx) error {
		res = retry.FleetShared{Granted: make([]float64, len(s.Buckets))}
		if n > 0 {
			if _, err := tx.Exec(ctx, fleetEnsureBuckets, kinds, accounts, merchants, tokens, bursts, floors, s.Replica, accrued); err != nil {
				return fmt.Errorf("store: fleet buckets: %w", err)
			}
			rows, err := tx.Query(ctx, fleetLockBuckets, kinds, accounts, merchants)
			if err != nil {
				return fmt.Errorf("store: fleet buckets: %w", err)
			}
			newTokens, newAccrued := make([]float64, n), make([]time.Time, n)
			seen := 0
			for rows.Next() {
				var (
					k   fleetKey
					row retry.BucketRow
				)
				if err := rows.Scan(&k.kind, &k.account, &k.merchant, &row.Tokens, &row.AccruedAt); err != nil {
					rows.Close()
					return fmt.Errorf("store: fleet buckets: %w", err)
				}
				i, ok := index[k]
				if !ok {
					continue
				}
				var granted float64
				row, granted = s.Buckets[i].Lease(row, s.Now)
				res.Granted[i] = granted
				j := pos[i]
				newTokens[j], newAccrued[j] = row.Tokens, row.AccruedAt
				seen++
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return fmt.Errorf("store: fleet buckets: %w", err)
			}
			if seen != n {
				return fmt.Errorf("store: fleet buckets: %d of %d rows found", seen, n)
			}
			if _, err := tx.Exec(ctx, fleetUpdateBuckets, kinds, accounts, merchants, newTokens, newAccrued, bursts, floors, s.Replica); err != nil {
				return fmt.Errorf("store: fleet buckets: %w", err)
			}
		}
		if len(s.Opened) > 0 {
			opened := slices.Clone(s.Opened)
			slices.SortFunc(opened, func(a, b retry.CircuitOpening) int { return cmp.Compare(a.Account, b.Account) })
			accts, untils := make([]string, len(opened)), make([]time.Time, len(opened))
			for i, o := range opened {
				accts[i], untils[i] = o.Account, o.Until
			}
			if _, err := tx.Exec(ctx, fleetOpenCircuits, accts, untils, s.Now, s.Replica); err != nil {
				return fmt.Errorf("store: fleet breakers: %w", err)
			}
		}
		open, err := fleetOpen(ctx, tx, s.Now)
		res.Open = open
		return err
	})
	if err != nil {
		return retry.FleetShared{}, err
	}
	return res, nil
}

// fleetOpen reads the circuits held open after now.
func fleetOpen(ctx context.Context, q interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}, now time.Time) (map[string]time.Time, error) {
	rows, err := q.Query(ctx, fleetOpenBreakers, now)
	if err != nil {
		return nil, fmt.Errorf("store: fleet breakers: %w", err)
	}
	open := map[string]time.Time{}
	for rows.Next() {
		var (
			account string
			until   time.Time
		)
		if err := rows.Scan(&account, &until); err != nil {
			rows.Close()
			return nil, fmt.Errorf("store: fleet breakers: %w", err)
		}
		open[account] = until
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: fleet breakers: %w", err)
	}
	return open, nil
}
