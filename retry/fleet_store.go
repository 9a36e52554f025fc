package retry

import (
	"context"
	"math"
	"time"
)

// FleetStore is the state the replicas of a fleet share, kept in PostgreSQL by the store:
// a token bucket per scope (processor account, merchant) and a global one, and until when
// each processor account's circuit is held open. It is what a Fleet needs of it.
//
// SyncFleet applies one replica's sync atomically. Each bucket of s.Buckets is created
// full (NewBucketRow) the first time any replica names it, and its row then changes as
// BucketSync.Lease says; each opening of s.Opened moves its account's open-until time
// forward, never back. SyncFleet returns the grants in the order of s.Buckets and every
// account whose circuit is held open after s.Now. On an error the caller counts on nothing:
// it is granted nothing, and it forgets the credit it sent, so that a sync whose commit was
// lost on the way never adds the same deposits twice.
type FleetStore interface {
	SyncFleet(ctx context.Context, s FleetSync) (FleetShared, error)
}

// FleetSync is what one replica tells the fleet's shared state at one sync.
type FleetSync struct {
	// Now is the replica's clock: the floors accrue up to it, and the circuits held open
	// are those open after it.
	Now time.Time
	// Replica names the replica, for operators reading the shared rows.
	Replica string
	// Buckets are the buckets the replica credits or leases from.
	Buckets []BucketSync
	// Opened are the circuits the replica opened since its last sync.
	Opened []CircuitOpening
}

// BucketSync is one bucket's part of a sync.
type BucketSync struct {
	// Global marks the global bucket; Account and Merchant name a scope's bucket and are
	// empty for the global one.
	Global            bool
	Account, Merchant string
	// Burst and MinPerSec shape the shared bucket (BudgetConfig): its stock is capped at
	// Burst, and MinPerSec tokens a second accrue to it, for the whole fleet, whatever the
	// traffic.
	Burst, MinPerSec float64
	// Credit is what the replica adds: its deposits since its last sync (a fraction of a
	// token per successful call) plus any lease it gives back.
	Credit float64
	// Want is how many whole tokens the replica asks to lease.
	Want float64
}

// BucketRow is a shared bucket: its stock of tokens, and up to when the floor has been
// accrued into it.
type BucketRow struct {
	Tokens    float64
	AccruedAt time.Time
}

// NewBucketRow is a bucket no replica has named before: full, accrued up to now.
func (s BucketSync) NewBucketRow(now time.Time) BucketRow {
	return BucketRow{Tokens: s.Burst, AccruedAt: now}
}

// Lease applies the sync of one bucket to its shared row at now and returns the new row and
// the whole tokens granted. The floor accrues from the row's AccruedAt up to now (a now
// earlier than the row's, a replica whose clock is behind, accrues nothing and does not move
// it back), the credit is added, the stock is capped at the burst, and then up to Want
// whole tokens leave it.
func (s BucketSync) Lease(row BucketRow, now time.Time) (BucketRow, float64) {
	level := row.Tokens
	if elapsed := now.Sub(row.AccruedAt); elapsed > 0 {
		level += elapsed.Seconds() * s.MinPerSec
		row.AccruedAt = now
	}
	level = min(s.Burst, level+max(s.Credit, 0))
	granted := min(max(math.Floor(s.Want), 0), math.Floor(level+admitEpsilon))
	row.Tokens = max(level-granted, 0)
	return row, granted
}

// CircuitOpening says that a replica opened the circuit of a processor account until a
// time.
type CircuitOpening struct {
	Account string
	Until   time.Time
}

// FleetShared is the fleet's answer to a sync.
type FleetShared struct {
	// Granted holds the tokens leased, one per bucket of the sync, in its order.
	Granted []float64
	// Open holds, per processor account, until when its circuit is held open by the
	// fleet; only the accounts open after the sync's Now.
	Open map[string]time.Time
}
