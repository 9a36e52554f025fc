package store_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/internal/dbtest"
	"github.com/paygate/paygate/store"
)

// explained returns the plan that explain (an EXPLAIN of a statement prepared on tx) prints,
// one line a node.
func explained(t *testing.T, tx pgx.Tx, explain string) string {
	t.Helper()
	rows, err := tx.Query(context.Background(), explain)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// A check's reading of the live charge that holds its charge's reference goes through the
// partial index of live references, whatever the plan's parameters: a plan that filtered the
// merchant's charges instead would read every charge of the merchant for every check.
func TestStandingReadsLiveReferencesByIndex(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tx := dbtest.Tx(t)
	for _, set := range []string{"SET LOCAL plan_cache_mode = force_generic_plan", "SET LOCAL enable_seqscan = off"} {
		if _, err := tx.Exec(ctx, set); err != nil {
			t.Fatal(err)
		}
	}
	// A merchant with many charges, none of them holding a reference, as the statistics
	// show them: with an empty table every index costs the same, and the planner's choice
	// says nothing.
	if _, err := tx.Exec(ctx, `INSERT INTO charges (id, merchant_id, amount, currency, initiator, payment_method, status, live)
		SELECT 'ch_plan_' || i, 'm_plan', 1000, 'usd', 'customer', 'pm_card_visa', 'succeeded', false
		  FROM generate_series(1, 5000) i`); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "ANALYZE charges"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Prepare(ctx, "standing", store.StandingSQL); err != nil {
		t.Fatal(err)
	}
	plan := explained(t, tx, "EXPLAIN EXECUTE standing('ch_x')")
	if !strings.Contains(plan, "charges_live_reference") {
		t.Fatalf("the standing's reference holder does not read charges_live_reference:\n%s", plan)
	}
}
