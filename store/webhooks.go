package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/charge"
)

// WebhookEvent is a processor event as the store keeps it: its id, recorded once, with its
// type and the charge and PaymentIntent it names (empty when it names none).
type WebhookEvent struct {
	ID            string
	Type          string
	ChargeID      string
	PaymentIntent string
}

// WebhookCharge is the charge an event names, as deciding what to do with the event needs it.
type WebhookCharge struct {
	// Found reports that the charge exists; the other fields are zero otherwise.
	Found      bool
	MerchantID string
	Status     charge.Status
	// Manual reports that an operator resolved the charge: processor evidence may still
	// contradict the resolution.
	Manual bool
}

// WebhookDecider decides what a new event calls for, inside the transaction that records it
// (where it may enqueue a job with jobs.Queue.InsertTx), and returns the event's disposition.
type WebhookDecider func(ctx context.Context, tx pgx.Tx, c WebhookCharge) (disposition string, err error)

// RecordWebhookEvent records event e once, in one transaction with what it calls for. When e's
// id was recorded before, it returns seen true and changes nothing. Otherwise it reads the
// charge e names, calls decide with it inside the transaction, and stores the disposition
// decide returns beside the id: the event, the charge's state and any job decide enqueued
// commit together, or not at all (an error from decide rolls back everything).
func (db *DB) RecordWebhookEvent(ctx context.Context, e WebhookEvent, decide WebhookDecider) (seen bool, disposition string, err error) {
	err = db.InTx(ctx, func(tx pgx.Tx) error {
		seen, disposition = false, ""
		tag, err := tx.Exec(ctx, `
			INSERT INTO webhook_events (id, type, charge_id, payment_intent, disposition)
			VALUES ($1, $2, NULLIF($3, ''), NULLIF($4, ''), '')
			ON CONFLICT (id) DO NOTHING`, e.ID, e.Type, e.ChargeID, e.PaymentIntent)
		if err != nil {
			return fmt.Errorf("store: record webhook event: %w", err)
		}
		if tag.RowsAffected() == 0 {
			seen = true
			return nil
		}
		var c WebhookCharge
		if e.ChargeID != "" {
			err := tx.QueryRow(ctx, `
				SELECT c.merchant_id, c.status, r.manual_outcome IS NOT NULL
				  FROM charges c LEFT JOIN reconciliations r ON r.charge_id = c.id
				 WHERE c.id = $1`, e.ChargeID).Scan(&c.MerchantID, &c.Status, &c.Manual)
			switch {
			case errors.Is(err, pgx.ErrNoRows):
			case err != nil:
				return fmt.Errorf("store: webhook event's charge: %w", err)
			default:
				c.Found = true
			}
		}
		if disposition, err = decide(ctx, tx, c); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE webhook_events SET disposition = $2 WHERE id = $1`, e.ID, disposition); err != nil {
			return fmt.Errorf("store: webhook event disposition: %w", err)
		}
		return nil
	})
	return seen, disposition, err
}

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
