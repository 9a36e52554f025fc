package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/charge"
)

// ClaimStuck implements charge.Store: it takes the keys of up to limit charges left
// processing by a request that died — the key's lock expired and the charge unchanged for
// longer than idle — locking each key for lockFor so that no other replica or inbound retry
// runs the same charge meanwhile. Rows another transaction holds are skipped.
func (db *DB) ClaimStuck(ctx context.Context, idle, lockFor time.Duration, limit int) ([]charge.Claim, time.Time, error) {
	var (
		out []charge.Claim
		now time.Time
	)
	err := db.InTx(ctx, func(tx pgx.Tx) error {
		out = nil
		if err := tx.QueryRow(ctx, `SELECT clock_timestamp()`).Scan(&now); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `
			SELECT k.merchant_id, k.key, k.charge_id FROM idempotency_keys k JOIN charges c ON c.id = k.charge_id
			 WHERE c.status = 'processing' AND (k.locked_until IS NULL OR k.locked_until < $1)
			   AND c.updated_at < $1::timestamptz - $2::interval
			 ORDER BY c.updated_at
			 LIMIT $3
			 FOR UPDATE OF k SKIP LOCKED`, now, idle, limit)
		if err != nil {
			return fmt.Errorf("store: find stuck charges: %w", err)
		}
		type claimKey struct{ merchant, key, chargeID string }
		keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (claimKey, error) {
			var k claimKey
			err := r.Scan(&k.merchant, &k.key, &k.chargeID)
			return k, err
		})
		if err != nil {
			return fmt.Errorf("store: find stuck charges: %w", err)
		}
		for _, k := range keys {
			if _, err := tx.Exec(ctx, `UPDATE idempotency_keys SET locked_until = $3 WHERE merchant_id = $1 AND key = $2`,
				k.merchant, k.key, now.Add(lockFor)); err != nil {
				return fmt.Errorf("store: claim stuck charge: %w", err)
			}
			c, err := chargeByID(ctx, tx, k.merchant, k.chargeID)
			if err != nil {
				return err
			}
			h, err := resumedHistory(ctx, tx, c)
			if err != nil {
				return err
			}
			out = append(out, charge.Claim{Key: k.key, Charge: c, History: h})
		}
		return nil
	})
	return out, now, err
}

// ReapKeys deletes the inbound idempotency keys whose charge reached a final state more than
// retention ago, and keys bound to no charge that are older than retention. It returns how
// many it deleted.
func (db *DB) ReapKeys(ctx context.Context, retention time.Duration) (int64, error) {
	tag, err := db.pool.Exec(ctx, `
		DELETE FROM idempotency_keys k
		 WHERE (k.charge_id IS NULL AND k.created_at < now() - $1::interval)
		    OR EXISTS (SELECT 1 FROM charges c WHERE c.id = k.charge_id
		                AND c.finalized_at IS NOT NULL AND c.finalized_at < now() - $1::interval)`, retention)
	if err != nil {
		return 0, fmt.Errorf("store: reap keys: %w", err)
	}
	return tag.RowsAffected(), nil
}
