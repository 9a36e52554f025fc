package store_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/paygate/paygate/internal/dbtest"
	"github.com/paygate/paygate/store"
)

// TestUnavailableCodes: the driver errors of a database that cannot serve now are
// unavailability, wherever they are wrapped; other database errors, and network errors
// that are not the driver's (a processor's), are not.
func TestUnavailableCodes(t *testing.T) {
	t.Parallel()
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"starting up", &pgconn.PgError{Severity: "FATAL", Code: "57P03", Message: "the database system is starting up"}, true},
		{"administrator shutdown", &pgconn.PgError{Code: "57P01"}, true},
		{"crash of another process", &pgconn.PgError{Code: "57P02"}, true},
		{"connection failure", &pgconn.PgError{Code: "08006"}, true},
		{"connection does not exist", &pgconn.PgError{Code: "08003"}, true},
		{"too many connections", &pgconn.PgError{Code: "53300"}, true},
		{"wrapped", fmt.Errorf("store: lock card: %w", &pgconn.PgError{Code: "57P03"}), true},
		{"connection closed by pgx", fmt.Errorf("store: x: %w", pgconn.ErrConnClosed), true},
		{"unique violation", &pgconn.PgError{Code: "23505"}, false},
		{"serialization failure", &pgconn.PgError{Code: "40001"}, false},
		{"undefined table", &pgconn.PgError{Code: "42P01"}, false},
		{"wrong password", &pgconn.PgError{Code: "28P01"}, false},
		{"no rows", pgx.ErrNoRows, false},
		{"a refused connection that is not the driver's", fmt.Errorf("processor: %w", refused), false},
		{"canceled", context.Canceled, false},
		{"other", errors.New("boom"), false},
		{"nil", nil, false},
	} {
		if got := store.Unavailable(tc.err); got != tc.want {
			t.Errorf("%s: Unavailable(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}

// TestUnavailableFromARealConnection: a database that refuses connections, and a connection
// the server terminated under the store, are ErrUnavailable: translated by InTx, and
// recognised by Unavailable on every other path.
func TestUnavailableFromARealConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	// Nothing listens on the port: every connection is refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	cfg, err := pgxpool.ParseConfig("postgres://paygate@" + dead + "/postgres?sslmode=disable&connect_timeout=2")
	if err != nil {
		t.Fatal(err)
	}
	down, err := pgxpool.NewWithConfig(ctx, cfg) // connects lazily
	if err != nil {
		t.Fatal(err)
	}
	defer down.Close()
	db := store.New(down)
	if err := db.InTx(ctx, func(pgx.Tx) error { return nil }); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("InTx on a refused connection: got %v, want ErrUnavailable", err)
	}
	if _, err := db.Charge(ctx, "m", "ch_x"); !store.Unavailable(err) {
		t.Fatalf("Charge on a refused connection: got %v, want it unavailable", err)
	}

	// The server terminates the connection the store runs on (as a restart does).
	conn, err := pgx.Connect(ctx, dbtest.URL(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var pid uint32
	if err := conn.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	if _, err := dbtest.Pool(t).Exec(ctx, `SELECT pg_terminate_backend($1, 5000)`, pid); err != nil {
		t.Fatal(err)
	}
	cut := store.New(conn)
	tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := cut.InTx(tctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(tctx, `SELECT 1`)
		return err
	}); !errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("InTx on a terminated connection: got %v, want ErrUnavailable", err)
	}
	if err := cut.Ping(tctx); !store.Unavailable(err) {
		t.Fatalf("Ping on a terminated connection: got %v, want it unavailable", err)
	}
}
