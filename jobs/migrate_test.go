package jobs

import (
	"context"
	"errors"
	"sync"
	"testing"

	"github.com/paygate/paygate/internal/dbtest"
)

func TestMigrate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := openPool(t, dbtest.NewDatabase(t))

	if err := Current(ctx, pool); !errors.Is(err, ErrSchemaBehind) {
		t.Fatalf("Current before Migrate: got %v, want ErrSchemaBehind", err)
	}

	// Replicas starting together all migrate at once.
	const replicas = 4
	errs := make([]error, replicas)
	var wg sync.WaitGroup
	for i := range replicas {
		wg.Go(func() { errs[i] = Migrate(ctx, pool) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("concurrent Migrate %d: got %v, want nil", i, err)
		}
	}
	// And once more: nothing left to do.
	if err := Migrate(ctx, pool); err != nil {
		t.Fatalf("second Migrate: got %v, want nil", err)
	}
	if err := Current(ctx, pool); err != nil {
		t.Fatalf("Current after Migrate: got %v, want nil", err)
	}

	m, err := migrator(pool)
	if err != nil {
		t.Fatal(err)
	}
	var applied int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM river_migration`).Scan(&applied); err != nil {
		t.Fatal(err)
	}
	if want := len(m.AllVersions()); applied != want {
		t.Fatalf("river_migration rows: got %d, want %d", applied, want)
	}
}
