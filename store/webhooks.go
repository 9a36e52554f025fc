package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/reconcile"
)

var _ reconcile.WebhookStore = (*DB)(nil)

// RecordWebhookEvent records event e once, in one transaction with what it calls for. When e's
// id was recorded before, it returns seen true and changes nothing. Otherwise it reads the
// charge e names, calls decide with it inside the transaction, and stores the disposition
// decide returns beside the id: the event, the charge's state and any job decide enqueued
// commit together, or not at all (an error from decide rolls back everything, and so does
// a delivery of the same id recorded meanwhile by another transaction: seen).
func (db *DB) RecordWebhookEvent(ctx context.Context, e reconcile.EventRecord, decide reconcile.EventDecider) (seen bool, disposition string, err error) {
	err = db.InTx(ctx, func(tx pgx.Tx) error {
		seen, disposition = false, ""
		var (
			c        reconcile.EventCharge
			merchant *string
			status   *string
		)
		if err := tx.QueryRow(ctx, `
			SELECT EXISTS (SELECT 1 FROM webhook_events WHERE id = $1), c.merchant_id, c.status,
				COALESCE(r.manual_outcome IS NOT NULL, false)
			  FROM (SELECT 1) one
			  LEFT JOIN charges c ON c.id = NULLIF($2, '')
			  LEFT JOIN reconciliations r ON r.charge_id = c.id`, e.ID, e.ChargeID).
			Scan(&seen, &merchant, &status, &c.Manual); err != nil {
			return fmt.Errorf("store: webhook event: %w", err)
		}
		if seen {
			return nil
		}
		if merchant != nil && status != nil {
			c.Found, c.MerchantID, c.Status = true, *merchant, charge.Status(*status)
		}
		var err error
		if disposition, err = decide(ctx, tx, c); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `
			INSERT INTO webhook_events (id, type, charge_id, payment_intent, disposition)
			VALUES ($1, $2, NULLIF($3, ''), NULLIF($4, ''), $5)
			ON CONFLICT (id) DO NOTHING`, e.ID, e.Type, e.ChargeID, e.PaymentIntent, disposition)
		if err != nil {
			return fmt.Errorf("store: record webhook event: %w", err)
		}
		if tag.RowsAffected() == 0 {
			// Another delivery of the id committed first: undo what decide did.
			return errWebhookSeen
		}
		return nil
	})
	if errors.Is(err, errWebhookSeen) {
		return true, "", nil
	}
	return seen, disposition, err
}

// errWebhookSeen rolls back the transaction of an event another delivery recorded first.
var errWebhookSeen = errors.New("store: webhook event recorded meanwhile")

// WebhookEventDisposition returns the disposition recorded for event id, or ErrNotFound.
func (db *DB) WebhookEventDisposition(ctx context.Context, id string) (string, error) {
	var d string
	err := db.pool.QueryRow(ctx, `SELECT disposition FROM webhook_events WHERE id = $1`, id).Scan(&d)
	if err != nil {
		return "", fmt.Errorf("store: webhook event: %w", interpretError(err))
	}
	return d, nil
}

// ReapWebhookEvents deletes the events received more than retention ago and returns how many
// it deleted. Keep them longer than the processor retries a delivery (3 days at Stripe):
// a delivery of a reaped id would be taken for a new event.
func (db *DB) ReapWebhookEvents(ctx context.Context, retention time.Duration) (int64, error) {
	tag, err := db.pool.Exec(ctx, `DELETE FROM webhook_events WHERE received_at < clock_timestamp() - $1::interval`, retention)
	if err != nil {
		return 0, fmt.Errorf("store: reap webhook events: %w", interpretError(err))
	}
	return tag.RowsAffected(), nil
}
