package report

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/paygate/paygate/decline"
)

// The period's bounds.
const (
	// DefaultPeriod is the period of a query without From: the 30 days
	// before To.
	DefaultPeriod = 30 * day
	// MaxPeriod is the longest period a query may ask for: a year, leap day
	// included.
	MaxPeriod = 366 * day
)

// Store reads the history of the cards of a period (a *store.DB).
type Store interface {
	// ReattemptCards returns the cards q selects, each with the history
	// described at [Card].
	ReattemptCards(ctx context.Context, q Query) ([]Card, error)
}

// ErrInvalidQuery is matched (errors.Is) by every [QueryError].
var ErrInvalidQuery = errors.New("report: invalid query")

// QueryError is a query that cannot be answered, with the parameter at
// fault ("from" or "to").
type QueryError struct {
	// Param is the parameter at fault.
	Param string
	// Msg says what is wrong, for the caller.
	Msg string
}

// Error names the parameter and what is wrong with it.
func (e *QueryError) Error() string { return fmt.Sprintf("report: %s: %s", e.Param, e.Msg) }

// Is makes errors.Is(err, ErrInvalidQuery) hold.
func (e *QueryError) Is(target error) bool { return target == ErrInvalidQuery }

// Config is what a [Service] is built from.
type Config struct {
	// Store reads the cards' histories.
	Store Store
	// Caps are the network caps the violations are counted against; zero
	// fields take the networks' defaults.
	Caps decline.Caps
	// Now is the clock for the default period; time.Now when nil.
	Now func() time.Time
}

// Service answers report queries.
type Service struct {
	store Store
	caps  decline.Caps
	now   func() time.Time
}

// New returns a Service.
func New(cfg Config) *Service {
	s := &Service{store: cfg.Store, caps: cfg.Caps, now: cfg.Now}
	if s.now == nil {
		s.now = time.Now
	}
	return s
}

// Reattempts is the reattempt audit report of one period.
type Reattempts struct {
	// From and To are the period, both included, in UTC.
	From, To time.Time
	// Rows has one row per card, sorted by processor account and
	// fingerprint.
	Rows []Row
}

// Reattempts builds the reattempt report for q. Without To the period ends
// now; without From it starts [DefaultPeriod] before To. It returns a
// *QueryError when From is after To or the period is longer than
// [MaxPeriod], and the store's error when the history cannot be read.
func (s *Service) Reattempts(ctx context.Context, q Query) (Reattempts, error) {
	q, err := Period(q, s.now())
	if err != nil {
		return Reattempts{}, err
	}
	cards, err := s.store.ReattemptCards(ctx, q)
	if err != nil {
		return Reattempts{}, err
	}
	return Reattempts{From: q.From, To: q.To, Rows: Build(cards, q, s.caps)}, nil
}

// Period returns q with its period's defaults filled in from now and both
// bounds in UTC, or a *QueryError when the period is backwards or longer than
// [MaxPeriod].
func Period(q Query, now time.Time) (Query, error) {
	if q.To.IsZero() {
		q.To = now
	}
	if q.From.IsZero() {
		q.From = q.To.Add(-DefaultPeriod)
	}
	q.From, q.To = q.From.UTC(), q.To.UTC()
	switch {
	case q.From.After(q.To):
		return q, &QueryError{Param: "from", Msg: "from must not be after to"}
	case q.To.Sub(q.From) > MaxPeriod:
		return q, &QueryError{Param: "to", Msg: "the period from from to to must not be longer than 366 days"}
	}
	return q, nil
}
