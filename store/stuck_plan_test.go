package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/internal/dbtest"
	"github.com/paygate/paygate/store"
)

// The completer's look at the keys whose lock ended runs in the backend that asks, even where
// workers look free to the planner: a parallel plan would start a worker process every second
// for a few milliseconds of work (migration 0026).
func TestStuckKeysLookRunsWithoutWorkers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := dbtest.Tx(t)
	for _, set := range []string{
		"SET LOCAL plan_cache_mode = force_generic_plan",
		"SET LOCAL parallel_setup_cost = 0", "SET LOCAL parallel_tuple_cost = 0",
		"SET LOCAL min_parallel_table_scan_size = 0", "SET LOCAL min_parallel_index_scan_size = 0",
	} {
		if _, err := tx.Exec(ctx, set); err != nil {
			t.Fatal(err)
		}
	}
	// Keys whose locks end over a minute, with their charges, as the statistics show them.
	if _, err := tx.Exec(ctx, `INSERT INTO charges (id, merchant_id, amount, currency, initiator, payment_method, status, live)
		SELECT 'ch_look_' || i, 'm_look', 1000, 'usd', 'customer', 'pm_card_visa', 'succeeded', true
		  FROM generate_series(1, 20000) i`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO idempotency_keys (merchant_id, key, fingerprint, charge_id, locked_until)
		SELECT 'm_look', 'k' || i, '\x00', 'ch_look_' || i, now() + i * interval '3 ms'
		  FROM generate_series(1, 20000) i`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "ANALYZE charges, idempotency_keys"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Prepare(ctx, "look", store.Statements["stuck_keys"]); err != nil {
		t.Fatal(err)
	}
	rows, err := tx.Query(ctx, "EXPLAIN EXECUTE look(now(), now() + interval '1 s')")
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	plan := strings.Join(lines, "\n")
	if strings.Contains(plan, "Gather") || strings.Contains(plan, "Parallel") {
		t.Fatalf("the completer's look plans workers:\n%s", plan)
	}
	if !strings.Contains(plan, "idempotency_keys_lock_end") {
		t.Fatalf("the completer's look does not read the keys by their lock's end:\n%s", plan)
	}
}
