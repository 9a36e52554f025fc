package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/paygate/paygate/internal/dbtest"
	"github.com/paygate/paygate/store"
)

func TestClockFollowsTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := dbtest.Pool(t)
	clock := store.New(pool).Clock(time.Hour)
	var dbNow time.Time
	if err := pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&dbNow); err != nil {
		t.Fatal(err)
	}
	if d := clock().Sub(dbNow); d < -time.Second || d > time.Second {
		t.Fatalf("clock is %v from the database's", d)
	}

	// A database that does not answer leaves the clock running on the last offset.
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	gone := store.New(tx).Clock(time.Nanosecond)
	for range 2 {
		if d := time.Until(gone()); d < -time.Second || d > time.Second {
			t.Fatalf("clock without a database is %v from this process's", d)
		}
	}
}
