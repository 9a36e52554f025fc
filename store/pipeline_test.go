package store

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/paygate/paygate/internal/dbtest"
)

// A transaction of one batch goes without BEGIN and COMMIT: its statements are one implicit
// transaction. A lock taken by the first is still held by the last, and when one fails,
// none of the batch's writes stays and the connection serves the next transaction.
func TestOneBatchIsOneTransaction(t *testing.T) {
	ctx := context.Background()
	pool := dbtest.Pool(t)
	db := New(pool)
	if _, err := pool.Exec(ctx, `CREATE TABLE pipeline_probe (id int PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = pool.Exec(context.Background(), `DROP TABLE pipeline_probe`) })
	run := func(ids ...int) (held bool, err error) {
		t.Helper()
		tx, err := db.pipeline(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.close(ctx)
		if !tx.implicit {
			t.Fatal("a pooled connection's transaction of one batch is not implicit")
		}
		b := &pgx.Batch{}
		b.Queue(`SELECT pg_advisory_xact_lock(7263001)`)
		for _, id := range ids {
			b.Queue(`INSERT INTO pipeline_probe (id) VALUES ($1)`, id)
		}
		b.Queue(`SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND objid = 7263001
			AND pid = pg_backend_pid() AND granted)`)
		err = tx.send(ctx, b, true, func(br pgx.BatchResults) error {
			for range len(ids) + 1 {
				if _, err := br.Exec(); err != nil {
					return err
				}
			}
			return br.QueryRow().Scan(&held)
		})
		return held, err
	}
	if held, err := run(1, 2); err != nil || !held {
		t.Fatalf("a batch of two inserts: lock held by its last statement %v, error %v", held, err)
	}
	var pgErr *pgconn.PgError
	if _, err := run(3, 1); !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		t.Fatalf("a batch whose second insert conflicts: %v, want a unique violation", err)
	}
	rows, _ := pool.Query(ctx, `SELECT id FROM pipeline_probe ORDER BY id`)
	ids, err := pgx.CollectRows(rows, pgx.RowTo[int])
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 2 || ids[0] != 1 || ids[1] != 2 {
		t.Fatalf("rows %v, want [1 2]: the failed batch's first insert must not stay", ids)
	}
	var free bool
	if err := pool.QueryRow(ctx, `SELECT pg_try_advisory_xact_lock(7263001)`).Scan(&free); err != nil || !free {
		t.Fatalf("the batch's lock is still held after it ended (%v)", err)
	}
	if held, err := run(4); err != nil || !held {
		t.Fatalf("the transaction after a failed one: lock held %v, error %v", held, err)
	}
}
