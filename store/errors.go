package store

import (
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

var (
	// ErrNotFound is returned when the row asked for does not exist (or belongs to
	// another merchant: the two are indistinguishable on purpose).
	ErrNotFound = errors.New("store: not found")
	// ErrConflict is returned when a write would violate a uniqueness rule.
	ErrConflict = errors.New("store: conflict")
)

// ConflictError is an ErrConflict that names the unique constraint that refused the write.
type ConflictError struct {
	Constraint string
	err        error
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("store: conflict on %s: %v", e.Constraint, e.err)
}

// Is makes errors.Is(err, ErrConflict) hold.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }

// Unwrap returns the driver error.
func (e *ConflictError) Unwrap() error { return e.err }

// interpretError translates driver errors into the store's sentinels.
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
	return err
}

// retryableTxError reports whether a transaction failed in a way that running it again
// may cure: a serialization failure or a deadlock.
func retryableTxError(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "40001" || pgErr.Code == "40P01")
}
