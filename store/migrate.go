package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/paygate/paygate/migrations"
)

// MigrationStatus says where the database schema stands against the embedded migrations.
type MigrationStatus struct {
	Current int64 // the newest version applied to the database
	Target  int64 // the newest version embedded in this binary
}

// Pending reports whether migrations are still to be applied.
func (s MigrationStatus) Pending() bool { return s.Current < s.Target }

// provider returns the migration provider of the database at url, once the database
// answered: a URL pgx cannot parse or a database it cannot reach fails here, with pgx's
// error (a *pgconn.ParseConfigError or *pgconn.ConnectError) in the chain.
func provider(ctx context.Context, url string) (*goose.Provider, *sql.DB, error) {
	db, err := sql.Open("pgx", url)
	if err != nil {
		return nil, nil, fmt.Errorf("store: open for migrations: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pingCtx); err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("store: connect for migrations: %w", err)
	}
	// A session advisory lock makes concurrent `paygate migrate` runs of several replicas
	// apply each file once.
	locker, err := lock.NewPostgresSessionLocker()
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("store: migration lock: %w", err)
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS,
		goose.WithSessionLocker(locker), goose.WithDisableGlobalRegistry(true))
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("store: migrations: %w", err)
	}
	return p, db, nil
}

// Migrate applies every pending migration to the database at url and returns the versions
// it applied.
func Migrate(ctx context.Context, url string) ([]int64, error) {
	p, db, err := provider(ctx, url)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	results, err := p.Up(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: migrate: %w", err)
	}
	applied := make([]int64, 0, len(results))
	for _, r := range results {
		applied = append(applied, r.Source.Version)
	}
	return applied, nil
}

// Migrations reports the schema version of the database at url against this binary's.
func Migrations(ctx context.Context, url string) (MigrationStatus, error) {
	p, db, err := provider(ctx, url)
	if err != nil {
		return MigrationStatus{}, err
	}
	defer db.Close()
	cur, target, err := p.GetVersions(ctx)
	if err != nil {
		return MigrationStatus{}, fmt.Errorf("store: migration status: %w", err)
	}
	return MigrationStatus{Current: cur, Target: target}, nil
}
