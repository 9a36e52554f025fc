package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Executor is what the store runs SQL on: a *pgxpool.Pool in production, or a pgx.Tx in
// tests that roll everything back (InTx then nests as savepoints).
type Executor interface {
	Begin(ctx context.Context) (pgx.Tx, error)
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// DB is paygate's store on a PostgreSQL connection pool.
type DB struct {
	pool       Executor
	raw        *pgxpool.Pool        // nil when the store runs inside a test transaction
	firstCheck time.Duration        // see Config.FirstCheckAfter
	creates    *grouper[*creating]  // nil when the store runs inside a test transaction
	finishes   *grouper[*finishing] // as creates
}

// DefaultFirstCheckAfter is how long after its outcome became unknown a charge is first
// reconciled, by default.
const DefaultFirstCheckAfter = 30 * time.Second

// Config tunes the connection pool.
type Config struct {
	// MaxConns bounds the pool (default 16). No connection is ever held across a
	// processor call, so a small pool serves many charges in flight.
	MaxConns int32
	// FirstCheckAfter is how long after its outcome became unknown a charge is first
	// reconciled (DefaultFirstCheckAfter when zero).
	FirstCheckAfter time.Duration
}

// Open connects to the database at url and checks that it answers.
func Open(ctx context.Context, url string, cfg Config) (*DB, error) {
	pcfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("store: parse DATABASE_URL: %w", err)
	}
	pcfg.MaxConns = 16
	if cfg.MaxConns > 0 {
		pcfg.MaxConns = cfg.MaxConns
	}
	// Every connection of the pool marks the errors of its reads and writes, so that a
	// connection the server broke (a primary stopped, a failover) is told apart from any
	// other I/O error: pgx returns them bare (see connIOError).
	dial := pcfg.ConnConfig.DialFunc
	pcfg.ConnConfig.DialFunc = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return markedConn{c}, nil
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("store: connect: %w", err)
	}
	pingCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := pool.Ping(pingCtx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("store: ping: %w", err)
	}
	fc := cfg.FirstCheckAfter
	if fc <= 0 {
		fc = DefaultFirstCheckAfter
	}
	db := &DB{pool: pool, raw: pool, firstCheck: fc}
	db.startGroups(groupLeaders)
	return db, nil
}

// markedConn is a database connection whose read and write errors are *connIOError.
type markedConn struct{ net.Conn }

func (c markedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if err != nil {
		err = &connIOError{err: err}
	}
	return n, err
}

func (c markedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	if err != nil {
		err = &connIOError{err: err}
	}
	return n, err
}

// New wraps an existing pool or transaction; the caller keeps ownership of it.
func New(e Executor) *DB {
	db := &DB{pool: e, firstCheck: DefaultFirstCheckAfter}
	if p, ok := e.(*pgxpool.Pool); ok {
		db.raw = p
		db.startGroups(groupLeaders)
	}
	return db
}

// Pool returns the underlying pool, for components (the job queue) that take one; nil
// when the store runs inside a transaction.
func (db *DB) Pool() *pgxpool.Pool { return db.raw }

// Close closes the pool when the store owns one.
func (db *DB) Close() {
	db.stopGroups()
	if db.raw != nil {
		db.raw.Close()
	}
}

// Ping checks that the database answers.
func (db *DB) Ping(ctx context.Context) error {
	_, err := db.pool.Exec(ctx, `SELECT 1`)
	return err
}

// Now returns the database clock.
func (db *DB) Now(ctx context.Context) (time.Time, error) {
	var now time.Time
	err := db.pool.QueryRow(ctx, `SELECT now()`).Scan(&now)
	return now, err
}

// Clock returns the database clock for code that asks the time often, such as the 24 h rule
// of every replica: this process's clock corrected by its offset from the database's, which is
// measured again at most every refresh. While the database does not answer, the last offset
// holds (zero before the first measure).
func (db *DB) Clock(refresh time.Duration) func() time.Time {
	var (
		mu       sync.Mutex
		offset   time.Duration
		measured time.Time
	)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		local := time.Now()
		if measured.IsZero() || local.Sub(measured) >= refresh {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			var dbNow time.Time
			err := db.pool.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&dbNow)
			cancel()
			if err == nil {
				// The database read its clock between the question and the answer.
				after := time.Now()
				offset = dbNow.Sub(local.Add(after.Sub(local) / 2))
				measured, local = after, after
			}
		}
		return local.Add(offset)
	}
}

// maxTxRuns bounds how often InTx runs a transaction that keeps failing with a
// serialization failure or deadlock.
const maxTxRuns = 5

// InTx runs fn in one transaction and commits it, running it again when PostgreSQL reports
// a serialization failure or a deadlock. fn must not have effects outside the transaction.
func (db *DB) InTx(ctx context.Context, fn func(pgx.Tx) error) error {
	var err error
	for run := 0; run < maxTxRuns; run++ {
		err = pgx.BeginFunc(ctx, db.pool, fn)
		if err == nil || !retryableTxError(err) {
			return interpretError(err)
		}
		if ctx.Err() != nil {
			return errors.Join(err, ctx.Err())
		}
	}
	return fmt.Errorf("store: transaction failed %d times: %w", maxTxRuns, err)
}
