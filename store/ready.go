package store

import (
	"context"
	"fmt"

	"github.com/paygate/paygate/migrations"
)

// Ready reports whether the database answers and its schema is current: it returns an error
// wrapping migrations.ErrSchemaBehind when migrations embedded in this binary are not applied.
func (db *DB) Ready(ctx context.Context) error {
	var current int64
	err := db.pool.QueryRow(ctx,
		`SELECT COALESCE(max(version_id), 0) FROM goose_db_version WHERE is_applied`).Scan(&current)
	if err != nil {
		return fmt.Errorf("store: schema version: %w", err)
	}
	return migrations.Behind(current)
}
