package migrations

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"
)

// ErrSchemaBehind is returned (wrapped) by a check of a database whose schema lacks migrations
// embedded in this binary.
var ErrSchemaBehind = errors.New("migrations: database schema is behind this binary: run `paygate migrate`")

// State says where a database's schema stands against the embedded migrations.
type State struct {
	Current int64 // the newest version applied to the database
	Target  int64 // the newest version embedded in this binary
}

// Pending reports whether migrations are still to be applied.
func (s State) Pending() bool { return s.Current < s.Target }

// provider returns the migration provider of the database at url, once the database
// answered: a URL pgx cannot parse or a database it cannot reach fails here, with pgx's
// error (a *pgconn.ParseConfigError or *pgconn.ConnectError) in the chain.
func provider(ctx context.Context, url string) (*goose.Provider, *sql.DB, error) {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return nil, nil, fmt.Errorf("migrations: open: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("migrations: connect: %w", err)
	}
	// A session advisory lock makes concurrent `paygate migrate` runs of several replicas
	// apply each file once.
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("migrations: lock: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, FS,
		goose.WithSessionLocker(locker), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("migrations: %w", err)
	}
	return p, db, nil
}

// Apply applies every pending migration to the database at url and returns the versions it
// applied.
func Apply(ctx context.Context, url string) ([]int64, error) {
	p, db, err := provider(ctx, url)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	results, err := p.Up(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrations: apply: %w", err)
	}
	applied := make([]int64, 0, len(results))
	for _, r := range results {
		applied = append(applied, r.Source.Version)
	}
	return applied, nil
}

// Versions reports the schema version of the database at url against this binary's.
func Versions(ctx context.Context, url string) (State, error) {
	p, db, err := provider(ctx, url)
	if err != nil {
		return State{}, err
	}
	defer db.Close()
	cur, target, err := p.GetVersions(ctx)
	if err != nil {
		return State{}, fmt.Errorf("migrations: versions: %w", err)
	}
	return State{Current: cur, Target: target}, nil
}

// Latest returns the newest migration version embedded in the binary.
func Latest() (int64, error) {
	entries, err := fs.ReadDir(FS, ".")
	if err != nil {
		return 0, err
	}
	var latest int64
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		if !ok {
			continue
		}
		v, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			continue
		}
		latest = max(latest, v)
	}
	return latest, nil
}

// Behind returns nil when a database at version current has every embedded migration, and
// an error wrapping ErrSchemaBehind when it lacks some.
func Behind(current int64) error {
	target, err := Latest()
	if err != nil {
		return err
	}
	if current < target {
		return fmt.Errorf("%w (database at %d, binary at %d)", ErrSchemaBehind, current, target)
	}
	return nil
}
