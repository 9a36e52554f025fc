package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/paygate/paygate/migrations"
)

// ErrSchemaBehind is returned by Ready when migrations embedded in this binary are not yet
// applied to the database.
var ErrSchemaBehind = errors.New("store: database schema is behind this binary: run `paygate migrate`")

// Ready reports whether the database answers and its schema is current.
func (db *DB) Ready(ctx context.Context) error {
	var current int64
	err := db.pool.QueryRow(ctx,
		`SELECT COALESCE(max(version_id), 0) FROM goose_db_version WHERE is_applied`).Scan(&current)
	if err != nil {
		return fmt.Errorf("store: schema version: %w", err)
	}
	target, err := embeddedVersion()
	if err != nil {
		return err
	}
	if current < target {
		return fmt.Errorf("%w (database at %d, binary at %d)", ErrSchemaBehind, current, target)
	}
	return nil
}

// embeddedVersion is the newest migration version embedded in the binary.
func embeddedVersion() (int64, error) {
	entries, err := fs.ReadDir(migrations.FS, ".")
	if err != nil {
		return 0, err
	}
	var max int64
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		if !ok {
			continue
		}
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			continue
		}
		if v > max {
			max = v
		}
	}
	return max, nil
}
