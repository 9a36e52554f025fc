package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/charge"
)

// DueReattempts implements charge.ChainStore: it returns up to limit automatic reattempts whose slot has come and whose
// charge does not exist yet.
func (db *DB) DueReattempts(ctx context.Context, limit int) ([]charge.DueReattempt, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT c.id, c.merchant_id, c.next_reattempt_id FROM charges c
		 WHERE c.next_reattempt_at <= clock_timestamp() AND c.status = 'declined'
		   AND NOT EXISTS (SELECT 1 FROM charges n WHERE n.id = c.next_reattempt_id)
		 ORDER BY c.next_reattempt_at LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("store: due reattempts: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (charge.DueReattempt, error) {
		var d charge.DueReattempt
		err := r.Scan(&d.DeclinedID, &d.MerchantID, &d.NextID)
		return d, err
	})
}

// Chain returns the charges of a merchant's reattempt chain, oldest first.
func (db *DB) Chain(ctx context.Context, merchantID, chain string) ([]charge.ChainStep, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT id, status, created_at, reattempt_of, next_reattempt_at FROM charges
		 WHERE merchant_id = $1 AND (id = $2 OR (chain = $2 AND reattempt_of IS NOT NULL)) ORDER BY created_at, id`, merchantID, chain)
	if err != nil {
		return nil, fmt.Errorf("store: chain: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (charge.ChainStep, error) {
		var s charge.ChainStep
		var created time.Time
		err := r.Scan(&s.ID, &s.Status, &created, &s.ReattemptOf, &s.NextReattemptAt)
		s.Created = created.Unix()
		return s, err
	})
}

// EndChain implements charge.ChainStore: it stops an automatic reattempt chain at a declined
// charge whose next step the network rules refused: the step is no longer due, and the audit
// trail says why. It returns charge.ErrNotFound when the chain has no step left to end.
func (db *DB) EndChain(ctx context.Context, declinedID, reason string) error {
	return db.InTx(ctx, func(tx pgx.Tx) error {
		var status string
		err := tx.QueryRow(ctx, `UPDATE charges SET next_reattempt_at = NULL WHERE id = $1 AND next_reattempt_at IS NOT NULL
			RETURNING status`, declinedID).Scan(&status)
		if err != nil {
			return chainError(err)
		}
		return event(ctx, tx, declinedID, "reattempts", "chain_stopped", reason, status, status, "", nil)
	})
}

// DeferChain implements charge.ChainStore: it moves the due step of an automatic chain to at,
// when the network rules found it too early (the card's history moved its slot); the sweep
// enqueues it again then. It returns charge.ErrNotFound when the chain has no step left to
// defer.
func (db *DB) DeferChain(ctx context.Context, declinedID string, at time.Time, reason string) error {
	return db.InTx(ctx, func(tx pgx.Tx) error {
		var status string
		err := tx.QueryRow(ctx, `UPDATE charges SET next_reattempt_at = $2 WHERE id = $1 AND next_reattempt_at IS NOT NULL
			RETURNING status`, declinedID, at).Scan(&status)
		if err != nil {
			return chainError(err)
		}
		return event(ctx, tx, declinedID, "reattempts", "chain_deferred", reason, status, status, "", nil)
	})
}

// chainError translates the error of a change to a chain: no step to change is
// charge.ErrNotFound.
func chainError(err error) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return charge.ErrNotFound
	}
	return interpretError(err)
}

var _ charge.ChainStore = (*DB)(nil)
