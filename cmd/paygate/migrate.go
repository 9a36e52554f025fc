package main

import (
	"context"
	"fmt"
	"io"

	"github.com/paygate/paygate/jobs"
	"github.com/paygate/paygate/migrations"
	"github.com/paygate/paygate/store"
)

func runMigrate(ctx context.Context, args []string, stdout io.Writer, getenv func(string) string) error {
	if len(args) != 0 {
		return &usageError{fmt.Sprintf("migrate takes no arguments, got %q (usage: paygate migrate)", args[0])}
	}
	cfg, err := loadConfig(getenv, true)
	if err != nil {
		return err
	}
	applied, err := migrations.Apply(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	// River's own tables: the durable job queue of the background work.
	db, err := store.Open(ctx, cfg.DatabaseURL, store.Config{MaxConns: 2})
	if err != nil {
		return err
	}
	defer db.Close()
	if err := jobs.Migrate(ctx, db.Pool()); err != nil {
		return err
	}
	st, err := migrations.Versions(ctx, cfg.DatabaseURL)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "paygate: schema at version %d (%d migrations applied now)\n", st.Current, len(applied))
	return nil
}

// openReady opens a small pool on the configured database for a one-shot command, and
// checks that the schema is current: a command run before `paygate migrate` says so.
func openReady(ctx context.Context, cfg config) (*store.DB, error) {
	db, err := store.Open(ctx, cfg.DatabaseURL, store.Config{MaxConns: 2})
	if err != nil {
		return nil, err
	}
	if err := db.Ready(ctx); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}
