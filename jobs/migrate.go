package jobs

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"
)

// migrateLockKey is the session advisory lock that serialises River migrations across
// replicas. rivermigrate takes no lock of its own: two processes migrating an empty
// database at once would both try to create River's tables. It differs from the lock the
// store's migrations take, so the two never wait on each other.
const migrateLockKey int64 = 0x7061796761746a62 // "paygatjb"

func migrator(pool *pgxpool.Pool) (*rivermigrate.Migrator[pgx.Tx], error) {
	m, err := rivermigrate.New(riverpgxv5.New(pool), &rivermigrate.Config{
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		return nil, fmt.Errorf("jobs: River migrator: %w", err)
	}
	return m, nil
}

// Migrate applies River's pending migrations (its tables: river_job, river_queue,
// river_leader, ...) to the database behind pool. It is idempotent, and safe when several
// replicas run it at once: each run holds a PostgreSQL advisory lock, on a connection of its
// own outside the pool, while it migrates, so the second finds nothing left to do. Every
// River migration runs in its own transaction.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	m, err := migrator(pool)
	if err != nil {
		return err
	}
	// The lock lives on a connection outside the pool so that a small pool cannot starve
	// the migrator of the connections it needs while the lock is held.
	conn, err := pgx.ConnectConfig(ctx, pool.Config().ConnConfig.Copy())
	if err != nil {
		return fmt.Errorf("jobs: migrate: connect: %w", err)
	}
	defer func() {
		closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		// Closing the session also releases its advisory lock.
		_ = conn.Close(closeCtx)
	}()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, migrateLockKey); err != nil {
		return fmt.Errorf("jobs: migrate: lock: %w", err)
	}
	if _, err := m.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return fmt.Errorf("jobs: migrate: %w", err)
	}
	return nil
}

// Current reports whether River's schema in the database behind pool is at the version this
// binary needs: nil when it is, an error wrapping ErrSchemaBehind when migrations are
// pending, another error when the database cannot be asked. It is a readiness check.
func Current(ctx context.Context, pool *pgxpool.Pool) error {
	m, err := migrator(pool)
	if err != nil {
		return err
	}
	res, err := m.Validate(ctx, nil)
	if err != nil {
		return fmt.Errorf("jobs: schema version: %w", err)
	}
	if !res.OK {
		return fmt.Errorf("%w (%s)", ErrSchemaBehind, strings.Join(res.Messages, "; "))
	}
	return nil
}
