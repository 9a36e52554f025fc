package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// batcher sends pipelined statements: a pooled connection, or a test's transaction.
type batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// pipelinedTx is one transaction sent as pipelined batches: its BEGIN travels with the
// first statements and its COMMIT with the last, so that a transaction of two phases costs
// two round trips. A transaction of one batch needs neither: the statements a batch sends
// before its Sync run as one implicit transaction, committed at the Sync and rolled back
// when one fails. Inside a test's transaction it is a savepoint.
type pipelinedTx struct {
	conn     batcher
	begin    string
	commit   string
	abort    []string // what ends the transaction without committing it
	release  func()
	open     bool
	implicit bool // whether a batch that opens and commits the transaction goes without them
}

// pipeline starts a pipelined transaction; its BEGIN is sent with the first batch.
func (db *DB) pipeline(ctx context.Context) (*pipelinedTx, error) {
	if db.raw == nil {
		tx, ok := db.pool.(batcher)
		if !ok {
			return nil, errors.New("store: the executor cannot pipeline")
		}
		return &pipelinedTx{conn: tx, begin: "SAVEPOINT pipelined", commit: "RELEASE SAVEPOINT pipelined",
			abort: []string{"ROLLBACK TO SAVEPOINT pipelined", "RELEASE SAVEPOINT pipelined"}, release: func() {}}, nil
	}
	c, err := db.raw.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: acquire connection: %w", err)
	}
	return &pipelinedTx{conn: c, begin: "BEGIN", commit: "COMMIT", abort: []string{"ROLLBACK"}, release: c.Release,
		implicit: true}, nil
}

// send runs the batch's statements, opening the transaction first when it is not open yet
// and committing it after them when last is true. read consumes the results of b's own
// statements, in order.
func (p *pipelinedTx) send(ctx context.Context, b *pgx.Batch, last bool, read func(pgx.BatchResults) error) error {
	first := !p.open
	if first && last && p.implicit {
		return p.sendImplicit(ctx, b, read)
	}
	full := &pgx.Batch{}
	if first {
		full.Queue(p.begin)
	}
	full.QueuedQueries = append(full.QueuedQueries, b.QueuedQueries...)
	if last {
		full.Queue(p.commit)
	}
	p.open = true
	br := p.conn.SendBatch(ctx, full)
	err := func() error {
		if first {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		if err := read(br); err != nil {
			return err
		}
		if last {
			if _, err := br.Exec(); err != nil {
				return err
			}
		}
		return nil
	}()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err == nil && last {
		p.open = false
	}
	return err
}

// sendImplicit runs b as the whole transaction, implicit in its batch.
func (p *pipelinedTx) sendImplicit(ctx context.Context, b *pgx.Batch, read func(pgx.BatchResults) error) error {
	br := p.conn.SendBatch(ctx, b)
	err := read(br)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

// abortTimeout bounds the rollback of a pipelined transaction that did not commit.
const abortTimeout = 5 * time.Second

// close ends the transaction: it rolls back what was not committed and gives the
// connection back (a connection whose rollback failed is closed by the pool).
func (p *pipelinedTx) close(ctx context.Context) {
	if p.open {
		// The caller's cancellation does not stop the rollback; a database that does not
		// answer does, and the pool then closes the connection.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortTimeout)
		for _, sql := range p.abort {
			_, _ = p.conn.Exec(actx, sql)
		}
		cancel()
		p.open = false
	}
	p.release()
}
