package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/decline"
)

// A key's lock covers the request that runs its charge; the charge's row says whether the
// request finished (its status is no longer processing). The completer looks for the keys
// whose lock ran out while their charge stayed processing, by the end of their lock:
// completer_watermark holds how far it has looked, so that a look reads only the keys whose
// lock ended since the last one, whatever the traffic before.

// stuckKeysSQL reads the keys whose lock ended in [$1, $2) and whose charge is still
// processing, with the charge's last change, in the order their locks ended. It reads the
// keys first and each one's charge by its id: since few charges are processing, a join left
// to the planner could scan every charge for them instead, which costs more than the keys
// of a long window (the LIMIT keeps the charge's read inside the loop over the keys).
const stuckKeysSQL = `
	SELECT k.merchant_id, k.key, k.charge_id, k.locked_until, c.updated_at FROM idempotency_keys k
	 CROSS JOIN LATERAL (SELECT c.updated_at FROM charges c WHERE c.id = k.charge_id AND c.status = 'processing' LIMIT 1) c
	 WHERE k.charge_id IS NOT NULL AND k.locked_until >= $1 AND k.locked_until < $2
	 ORDER BY k.locked_until`

// lookStartSQL reads the database clock and how far the completer has looked. It also has the
// look that follows in its transaction read the keys through their index, however many keys
// the planner expects: a look's window is a second, or the seconds of a pause, and a scan of
// the whole key table costs more than the index's ranges for any of them. Turning sequential
// scans off adds a penalty of 10^10 to the estimate of every plan that keeps one (the
// watermark's one-row update does), far past JIT's thresholds, so the transaction turns JIT
// off too: compiling that update cost 30 to 85 ms of a backend's CPU on every look.
const lookStartSQL = `SELECT clock_timestamp(), watermark, set_config('enable_seqscan', 'off', true),
	set_config('jit', 'off', true) FROM completer_watermark`

// advanceWatermarkSQL moves the completer's watermark forward, never back.
const advanceWatermarkSQL = `UPDATE completer_watermark SET watermark = GREATEST(watermark, $1)`

// ClaimStuck implements charge.Store: it takes the keys of up to limit charges left
// processing by a request that died — the key's lock expired and the charge unchanged for
// longer than idle — locking each key for lockFor so that no other replica or inbound retry
// runs the same charge meanwhile.
func (db *DB) ClaimStuck(ctx context.Context, idle, lockFor time.Duration, limit int) ([]charge.Claim, time.Time, error) {
	var (
		out []charge.Claim
		now time.Time
	)
	err := db.InTx(ctx, func(tx pgx.Tx) error {
		out = nil
		var from time.Time
		var seqscan, jit string
		if err := tx.QueryRow(ctx, lookStartSQL).Scan(&now, &from, &seqscan, &jit); err != nil {
			return fmt.Errorf("store: completer watermark: %w", err)
		}
		rows, err := tx.Query(ctx, stuckKeysSQL, from, now)
		if err != nil {
			return fmt.Errorf("store: find stuck charges: %w", err)
		}
		type stuckKey struct {
			merchant, key, chargeID string
			lockEnd, updated        time.Time
		}
		keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (stuckKey, error) {
			var k stuckKey
			err := r.Scan(&k.merchant, &k.key, &k.chargeID, &k.lockEnd, &k.updated)
			return k, err
		})
		if err != nil {
			return fmt.Errorf("store: find stuck charges: %w", err)
		}
		// The watermark passes every key seen settled and every key claimed (its lock now
		// ends later); it stops at the first key whose charge is still too fresh to take, or
		// that was not taken.
		watermark := now
		for _, k := range keys {
			if len(out) >= limit || k.updated.After(now.Add(-idle)) {
				watermark = k.lockEnd
				break
			}
			tag, err := tx.Exec(ctx, `UPDATE idempotency_keys SET locked_until = $3
				WHERE merchant_id = $1 AND key = $2 AND locked_until = $4`, k.merchant, k.key, now.Add(lockFor), k.lockEnd)
			if err != nil {
				return fmt.Errorf("store: claim stuck charge: %w", err)
			}
			if tag.RowsAffected() == 0 {
				continue // another replica or a retry took it: its lock ends later now
			}
			c, err := chargeByID(ctx, tx, k.merchant, k.chargeID)
			if err != nil {
				return err
			}
			h, err := historyWithout(ctx, tx, c)
			if err != nil {
				return err
			}
			out = append(out, charge.Claim{Key: k.key, Charge: c, History: h})
		}
		if _, err := tx.Exec(ctx, advanceWatermarkSQL, watermark); err != nil {
			return fmt.Errorf("store: completer watermark: %w", err)
		}
		return nil
	})
	return out, now, err
}

// historyWithout returns the whole history of c's card without c's own attempt: nil for a
// charge without a card.
func historyWithout(ctx context.Context, q rowsQuerier, c *charge.Charge) (decline.History, error) {
	if c.Card == nil {
		return nil, nil
	}
	h, err := cardHistory(ctx, q, c.ProcessorAccount, c.Card.Fingerprint)
	if err != nil {
		return nil, err
	}
	out := h[:0]
	for _, a := range h {
		if a.Charge != c.ID {
			out = append(out, a)
		}
	}
	return out, nil
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
