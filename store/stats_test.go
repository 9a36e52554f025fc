package store_test

import (
	"context"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/internal/dbtest"
)

// The columns that ANALYZE gathers no statistics for (statistics target 0, migration 0025) are
// exactly the ones listed here, and no index keys on one of them or names one in its
// predicate or expressions. An index over such a column would be planned without its
// statistics: the migration that adds the index must give the column its statistics back
// (ALTER TABLE ... ALTER COLUMN ... SET STATISTICS -1) and take it off this list. The test
// cannot see the statements themselves: a new WHERE, JOIN, GROUP BY or ORDER BY on a listed
// column needs the same change, by the author's own check.
func TestColumnStats(t *testing.T) {
	t.Parallel()
	tests := []struct {
		table string
		want  []string // the columns without statistics
	}{
		{"charges", []string{"amount", "card_exp_month", "card_exp_year", "currency", "initiator", "reattempt_mode",
			"customer", "payment_method", "metadata", "attempts", "response_status", "first_sent_at", "card_settled_at",
			"card_category", "card_mac", "card_cap_reached", "failure_retryable", "card_hold", "failure_code", "decline",
			"outcome_reason", "attempt_log", "response_body"}},
		{"idempotency_keys", []string{"fingerprint"}},
	}
	tx := dbtest.Tx(t)
	for _, tt := range tests {
		t.Run(tt.table, func(t *testing.T) {
			got := columnsWithoutStatistics(t, tx, tt.table)
			want := slices.Sorted(slices.Values(tt.want))
			if !slices.Equal(got, want) {
				t.Errorf("columns of %s without statistics: got %v, want %v", tt.table, got, want)
			}
			for _, u := range indexedColumns(t, tx, tt.table) {
				if slices.Contains(got, u.column) {
					t.Errorf("%s uses column %s, which has no statistics: give it its statistics back "+
						"(SET STATISTICS -1) in the migration that adds the index", u.index, u.column)
				}
			}
		})
	}
}

// columnsWithoutStatistics returns the columns of table whose statistics target is 0, by
// name.
func columnsWithoutStatistics(t *testing.T, tx pgx.Tx, table string) []string {
	t.Helper()
	rows, err := tx.Query(context.Background(), `
		SELECT attname FROM pg_attribute
		 WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped AND attstattarget = 0
		 ORDER BY attname`, table)
	if err != nil {
		t.Fatalf("columns of %s without statistics: %v", table, err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("columns of %s without statistics: %v", table, err)
	}
	return names
}

// indexUse is a column an index uses, with the index's definition.
type indexUse struct {
	index  string
	column string
}

// indexedColumns returns the columns of table that an index keys on (pg_index.indkey) or
// names in its expressions or predicate (the index's dependencies on the table's columns).
func indexedColumns(t *testing.T, tx pgx.Tx, table string) []indexUse {
	t.Helper()
	rows, err := tx.Query(context.Background(), `
		SELECT DISTINCT pg_get_indexdef(i.indexrelid), a.attname
		  FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum > 0 AND NOT a.attisdropped
		 WHERE i.indrelid = $1::regclass
		   AND (a.attnum = ANY (i.indkey::int2[])
		        OR EXISTS (SELECT 1 FROM pg_depend d
		                    WHERE d.classid = 'pg_class'::regclass AND d.objid = i.indexrelid
		                      AND d.refclassid = 'pg_class'::regclass AND d.refobjid = i.indrelid
		                      AND d.refobjsubid = a.attnum))
		 ORDER BY 1, 2`, table)
	if err != nil {
		t.Fatalf("indexed columns of %s: %v", table, err)
	}
	uses, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (indexUse, error) {
		var u indexUse
		err := r.Scan(&u.index, &u.column)
		return u, err
	})
	if err != nil {
		t.Fatalf("indexed columns of %s: %v", table, err)
	}
	if len(uses) == 0 {
		t.Fatalf("indexed columns of %s: none found, want at least its primary key's", table)
	}
	return uses
}
