package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/paygate/paygate/internal/dbtest"
	"github.com/paygate/paygate/store"
)

// The completer's look reads the keys whose lock ended by their lock's end and then each
// one's charge by its id, in the backend that asks, whatever its window and even where
// workers look free: a scan of every charge for the few still processing, a scan of every
// key, or a worker process started every second, costs more than the keys of a long window.
func TestStuckKeysLookReadsKeysThenTheirCharges(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := dbtest.Tx(t)
	for _, set := range []string{
		"SET LOCAL parallel_setup_cost = 0", "SET LOCAL parallel_tuple_cost = 0",
		"SET LOCAL min_parallel_table_scan_size = 0", "SET LOCAL min_parallel_index_scan_size = 0",
	} {
		if _, err := tx.Exec(ctx, set); err != nil {
			t.Fatal(err)
		}
	}
	// Keys whose locks end over a minute, with their charges, none processing any more, as
	// the statistics show them.
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
	// The look runs in the completer's transaction, after its start.
	if _, err := tx.Exec(ctx, store.Statements["look_start"]); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Prepare(ctx, "look", store.Statements["stuck_keys"]); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, mode, window string
	}{
		{"a second, generic plan", "force_generic_plan", "1 s"},
		{"a second, its own plan", "force_custom_plan", "1 s"},
		{"ten seconds, its own plan", "force_custom_plan", "10 s"},
		{"every key, its own plan", "force_custom_plan", "2 min"},
	}
	for _, tt := range tests {
		if _, err := tx.Exec(ctx, "SELECT set_config('plan_cache_mode', $1, true)", tt.mode); err != nil {
			t.Fatal(err)
		}
		plan := explained(t, tx, "EXPLAIN EXECUTE look(now(), now() + interval '"+tt.window+"')")
		for _, bad := range []string{"Gather", "Parallel", "Seq Scan on charges", "Hash"} {
			if strings.Contains(plan, bad) {
				t.Errorf("%s: the look's plan has %q:\n%s", tt.name, bad, plan)
			}
		}
		for _, good := range []string{"idempotency_keys_lock_end", "Index Scan using charges_pkey"} {
			if !strings.Contains(plan, good) {
				t.Errorf("%s: the look's plan does not read %s:\n%s", tt.name, good, plan)
			}
		}
	}
}

// Every statement of the completer's transaction runs without JIT: turning sequential scans
// off makes the estimates of the plans that keep one (the watermark's one-row update) pass
// JIT's thresholds by far, and compiling that update cost tens of milliseconds every second.
func TestLookTransactionCompilesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := dbtest.Tx(t)
	var available bool
	if err := tx.QueryRow(ctx, "SELECT pg_jit_available()").Scan(&available); err != nil {
		t.Fatal(err)
	}
	if !available {
		t.Skip("this PostgreSQL has no JIT to turn off")
	}
	if _, err := tx.Exec(ctx, store.Statements["look_start"]); err != nil {
		t.Fatal(err)
	}
	for name, explain := range map[string]string{
		"stuck_keys":        "EXPLAIN EXECUTE stuck_keys(now(), now() + interval '1 s')",
		"advance_watermark": "EXPLAIN EXECUTE advance_watermark(now())",
	} {
		if _, err := tx.Prepare(ctx, name, store.Statements[name]); err != nil {
			t.Fatal(err)
		}
		if plan := explained(t, tx, explain); strings.Contains(plan, "JIT") {
			t.Errorf("%s is compiled in the look's transaction:\n%s", name, plan)
		}
	}
}
