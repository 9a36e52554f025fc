// Package dbtest gives tests a real PostgreSQL database.
//
// DATABASE_URL names a server on which the tests may create databases (`make test` starts a
// throwaway cluster and sets it). The first test package to need a database migrates one
// template database, named after a hash of the embedded migrations so that a schema change
// gets a new template; every test package then clones the template into a database of its
// own, dropped when the package's tests end. Within a package, Tx gives each test a
// transaction that is rolled back, and Pool a shared pool for tests that must commit
// (those use their own merchant ids, so they never see each other's rows).
//
// Without DATABASE_URL the tests that need a database are skipped, except in CI
// (CI=true), where a missing database fails the run.
package dbtest

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paygate/paygate/migrations"
)

var (
	mu      sync.Mutex
	pool    *pgxpool.Pool
	dbURL   string
	dbName  string
	initErr error
)

// Main runs a test package's tests, checks the invariants of what they committed (see
// Invariants), and then drops the package's database. Call it from TestMain:
// func TestMain(m *testing.M) { dbtest.Main(m) }.
func Main(m *testing.M) {
	code := m.Run()
	mu.Lock()
	if pool != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := Invariants(ctx, pool); err != nil {
			fmt.Fprintf(os.Stderr, "dbtest: after the tests: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
		cancel()
		pool.Close()
		ctx, cancel = context.WithTimeout(context.Background(), 30*time.Second)
		if admin, err := pgx.Connect(ctx, os.Getenv("DATABASE_URL")); err == nil {
			_, _ = admin.Exec(ctx, `DROP DATABASE IF EXISTS `+pgx.Identifier{dbName}.Sanitize()+` WITH (FORCE)`)
			_ = admin.Close(ctx)
		}
		cancel()
	}
	mu.Unlock()
	os.Exit(code)
}

// LiveStatuses are the statuses in which a charge is live (charge.Status.Live, whose test
// holds the two to each other; this package cannot import charge, whose jobs use it).
var LiveStatuses = []string{"processing", "pending", "succeeded"}

// Invariants checks what the rows of a database must always hold, whatever wrote them:
// every charge's live column says what its status does, since each statement that sets a
// status sets it too.
func Invariants(ctx context.Context, db interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}) error {
	var n int64
	var example string
	err := db.QueryRow(ctx, `SELECT count(*), COALESCE(min(id || ' (' || status || ', live ' || live || ')'), '')
		FROM charges WHERE live IS DISTINCT FROM (status = ANY ($1::text[]))`, LiveStatuses).Scan(&n, &example)
	switch {
	case err != nil:
		return fmt.Errorf("read charges' live column: %w", err)
	case n > 0:
		return fmt.Errorf("%d charges have a live column their status contradicts, such as %s", n, example)
	}
	return nil
}

// URL returns the connection URL of the package's own database, creating it on first use.
func URL(t testing.TB) string {
	t.Helper()
	setup(t)
	return dbURL
}

// Pool returns the shared pool on the package's own database.
func Pool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	setup(t)
	return pool
}

// Tx returns a transaction on the package's database that is rolled back when the test ends.
func Tx(t testing.TB) pgx.Tx {
	t.Helper()
	p := Pool(t)
	tx, err := p.Begin(context.Background())
	if err != nil {
		t.Fatalf("dbtest: begin: %v", err)
	}
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	return tx
}

// NewDatabase clones the template into a database of the test's own, dropped when the test
// ends, and returns its URL: for whole-program tests that own every row.
func NewDatabase(t testing.TB) string {
	t.Helper()
	admin := adminURL(t)
	ctx := context.Background()
	tmpl, err := template(ctx, admin)
	if err != nil {
		t.Fatalf("dbtest: template: %v", err)
	}
	name := "paygate_test_" + randomSuffix()
	u, err := clone(ctx, admin, tmpl, name)
	if err != nil {
		t.Fatalf("dbtest: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if conn, err := pgx.Connect(ctx, u); err == nil {
			if err := Invariants(ctx, conn); err != nil {
				t.Errorf("dbtest: after the test: %v", err)
			}
			_ = conn.Close(ctx)
		}
		if conn, err := pgx.Connect(ctx, admin); err == nil {
			_, _ = conn.Exec(ctx, `DROP DATABASE IF EXISTS `+pgx.Identifier{name}.Sanitize()+` WITH (FORCE)`)
			_ = conn.Close(ctx)
		}
	})
	return u
}

func adminURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("DATABASE_URL")
	if u == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("dbtest: DATABASE_URL is not set; in CI the database tests must run (use `make test`)")
		}
		t.Skip("dbtest: DATABASE_URL is not set; run `make test`, which starts a throwaway PostgreSQL")
	}
	return u
}

func setup(t testing.TB) {
	t.Helper()
	admin := adminURL(t)
	mu.Lock()
	defer mu.Unlock()
	if pool == nil && initErr == nil {
		initErr = func() error {
			ctx := context.Background()
			tmpl, err := template(ctx, admin)
			if err != nil {
				return fmt.Errorf("template: %w", err)
			}
			dbName = "paygate_test_" + randomSuffix()
			dbURL, err = clone(ctx, admin, tmpl, dbName)
			if err != nil {
				return err
			}
			cfg, err := pgxpool.ParseConfig(dbURL)
			if err != nil {
				return err
			}
			cfg.MaxConns = 20
			pool, err = pgxpool.NewWithConfig(ctx, cfg)
			return err
		}()
	}
	if initErr != nil {
		t.Fatalf("dbtest: %v", initErr)
	}
}

// template returns the name of the migrated template database, creating it under an
// advisory lock when no test package has yet.
func template(ctx context.Context, admin string) (string, error) {
	name, err := templateName()
	if err != nil {
		return "", err
	}
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", fmt.Errorf("connect to DATABASE_URL: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(7263001)`); err != nil {
		return "", err
	}
	defer conn.Exec(ctx, `SELECT pg_advisory_unlock(7263001)`) //nolint:errcheck
	var ready bool
	err = conn.QueryRow(ctx,
		`SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1 AND datistemplate)`, name).Scan(&ready)
	if err != nil || ready {
		return name, err
	}
	// A template left half-made by an interrupted run is made again.
	if _, err := conn.Exec(ctx, `DROP DATABASE IF EXISTS `+pgx.Identifier{name}.Sanitize()+` WITH (FORCE)`); err != nil {
		return "", err
	}
	if _, err := conn.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize()); err != nil {
		return "", err
	}
	u, err := withDatabase(admin, name)
	if err != nil {
		return "", err
	}
	if _, err := migrations.Apply(ctx, u); err != nil {
		return "", err
	}
	_, err = conn.Exec(ctx, `ALTER DATABASE `+pgx.Identifier{name}.Sanitize()+` WITH IS_TEMPLATE true`)
	return name, err
}

func clone(ctx context.Context, admin, tmpl, name string) (string, error) {
	conn, err := pgx.Connect(ctx, admin)
	if err != nil {
		return "", fmt.Errorf("connect to DATABASE_URL: %w", err)
	}
	defer conn.Close(ctx)
	// Concurrent clones of one template are serialised: PostgreSQL refuses to copy a
	// template that another session is connected to.
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(7263002)`); err != nil {
		return "", err
	}
	defer conn.Exec(ctx, `SELECT pg_advisory_unlock(7263002)`) //nolint:errcheck
	_, err = conn.Exec(ctx, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize()+` TEMPLATE `+pgx.Identifier{tmpl}.Sanitize())
	if err != nil {
		return "", fmt.Errorf("clone template: %w", err)
	}
	return withDatabase(admin, name)
}

func templateName() (string, error) {
	h := sha256.New()
	err := fs.WalkDir(migrations.FS, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := migrations.FS.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", path, len(b))
		h.Write(b)
		return nil
	})
	if err != nil {
		return "", err
	}
	return "paygate_template_" + hex.EncodeToString(h.Sum(nil))[:12], nil
}

func withDatabase(raw, name string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("parse DATABASE_URL: %w", err)
	}
	u.Path = "/" + name
	return u.String(), nil
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
