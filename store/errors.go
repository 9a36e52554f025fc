package store

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

var (
	// ErrNotFound is returned when the row asked for does not exist (or belongs to
	// another merchant: the two are indistinguishable on purpose).
	ErrNotFound = errors.New("store: not found")
	// ErrConflict is returned when a write would violate a uniqueness rule.
	ErrConflict = errors.New("store: conflict")
	// ErrUnavailable is returned when the database cannot be reached now: it is starting
	// up, shutting down or restarting (SQLSTATE 57P01, 57P02, 57P03), it has no connection
	// slot left (53300), it is a standby now (25006, after a failover), no connection to it
	// can be made (refused, reset, timed out; with several hosts, none accepts writes), or
	// the connection broke under a statement (class 08, a connection closed or reset). A
	// transaction that failed so did not commit, unless the connection broke during its
	// COMMIT: then it committed whole or not at all. A later retry may succeed.
	ErrUnavailable = errors.New("store: database unavailable")
)

// UnavailableError is an ErrUnavailable with the driver error that said so.
type UnavailableError struct {
	err error
}

// Error says the database is unavailable, and why.
func (e *UnavailableError) Error() string { return "store: database unavailable: " + e.err.Error() }

// Is makes errors.Is(err, ErrUnavailable) hold.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// Unwrap returns the driver error.
func (e *UnavailableError) Unwrap() error { return e.err }

// Unavailable reports whether err says that the database could not be reached: an error
// the store translated into ErrUnavailable, or one that carries the driver's error as pgx
// gave it (wrapped by a statement of the store, or by the job queue, which shares the pool).
// Every caller that turns errors into answers asks it, so that a database restart is an
// outage to retry after, never an internal error.
func Unavailable(err error) bool {
	return errors.Is(err, ErrUnavailable) || unreachable(err)
}

// unreachable reports whether the driver error err says the database cannot be reached.
func unreachable(err error) bool {
	if err == nil {
		return false
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// The server answered: only the codes of a server that cannot serve now.
		switch c := pgErr.Code; {
		case strings.HasPrefix(c, "08"), // connection exception
			c == "57P01", // admin_shutdown: terminating connection due to administrator command
			c == "57P02", // crash_shutdown: another server process crashed
			c == "57P03", // cannot_connect_now: the database system is starting up
			c == "53300", // too_many_connections
			c == "25006": // read_only_sql_transaction: the server is a standby now (a failover)
			return true
		}
		return false
	}
	var broken *connIOError
	if errors.As(err, &broken) {
		// A read or write of a connection of Open's pool failed: the server went away
		// under it, unless the statement only ran out of time.
		var netErr net.Error
		return !errors.As(broken.err, &netErr) || !netErr.Timeout()
	}
	var connect *pgconn.ConnectError
	if errors.As(err, &connect) || errors.Is(err, pgconn.ErrConnClosed) {
		return true // no connection could be made, or pgx closed the one in use
	}
	// A connection that broke under a statement: pgconn's error for the read or write that
	// failed (it says whether the statement may have been sent) wraps the network's.
	var fromPgconn interface{ SafeToRetry() bool }
	if !errors.As(err, &fromPgconn) {
		return false
	}
	var opErr *net.OpError
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || (errors.As(err, &opErr) && !opErr.Timeout())
}

// connIOError is the error of a read or write on a connection of a pool Open made. pgx
// returns such errors bare (io.ErrUnexpectedEOF when the server closed the connection, a
// *net.OpError when it was reset), where nothing would tell them from another package's I/O
// errors: the pool's connections mark them.
type connIOError struct{ err error }

func (e *connIOError) Error() string { return e.err.Error() }

func (e *connIOError) Unwrap() error { return e.err }

// ConflictError is an ErrConflict that names the unique constraint that refused the write.
type ConflictError struct {
	Constraint string
	err        error
}

// Error names the constraint.
func (e *ConflictError) Error() string {
	return fmt.Sprintf("store: conflict on %s: %v", e.Constraint, e.err)
}

// Is makes errors.Is(err, ErrConflict) hold.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// Unwrap returns the driver error.
func (e *ConflictError) Unwrap() error { return e.err }

// interpretError translates driver errors into the store's sentinels: ErrNotFound,
// *ConflictError (ErrConflict) and *UnavailableError (ErrUnavailable).
func interpretError(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return ErrNotFound
	}
	var conflict *ConflictError
	if errors.As(err, &conflict) {
		return err // translated already
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" {
		return &ConflictError{Constraint: pgErr.ConstraintName, err: err}
	}
	var unavailable *UnavailableError
	if !errors.As(err, &unavailable) && unreachable(err) {
		return &UnavailableError{err: err}
	}
	return err
}

// retryableTxError reports whether a transaction failed in a way that running it again
// may cure: a serialization failure or a deadlock.
func retryableTxError(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40001" || pgErr.Code == "40P01")
}
