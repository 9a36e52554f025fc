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
		if err := tx.QueryRow(ctx, webhookChargeSQL, e.ID, e.ChargeID).
			Scan(&seen, &merchant, &status, &c.Manual, &c.Account, &c.ProcessorRef, &c.Amount, &c.Currency); err != nil {
			return fmt.Errorf("store: webhook event: %w", err)
		}
		if seen {
			return nil
		}
		if merchant != nil && status != nil {
			c.Found, c.MerchantID, c.Status = true, *merchant, charge.Status(*status)
		}
		d, err := decide(ctx, tx, c)
		if err != nil {
			return err
		}
		disposition = d.Disposition
		var evidence []byte
		if d.Review {
			evidence = nullJSON(e.Evidence)
		}
		tag, err := tx.Exec(ctx, insertWebhookEventSQL, e.ID, e.Type, e.ChargeID, e.PaymentIntent, disposition, e.Account,
			evidence, d.Review)
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

// webhookChargeSQL reads whether an event id was recorded, and the charge it names.
const webhookChargeSQL = `
	SELECT EXISTS (SELECT 1 FROM webhook_events WHERE id = $1), c.merchant_id, c.status,
		COALESCE(r.manual_outcome IS NOT NULL, false), COALESCE(c.processor_account, ''), COALESCE(c.processor_ref, ''),
		COALESCE(c.amount, 0), COALESCE(c.currency, '')
	  FROM (SELECT 1) one
	  LEFT JOIN charges c ON c.id = NULLIF($2, '')
	  LEFT JOIN reconciliations r ON r.charge_id = c.id`

// insertWebhookEventSQL records an event id once, with its disposition, and the event itself
// when it waits in review.
const insertWebhookEventSQL = `
	INSERT INTO webhook_events (id, type, charge_id, payment_intent, disposition, account, evidence, in_review)
	VALUES ($1, $2, NULLIF($3, ''), NULLIF($4, ''), $5, NULLIF($6, ''), $7, $8)
	ON CONFLICT (id) DO NOTHING`

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

// ReapWebhookEvents deletes the events received more than retention ago, but those waiting
// in review, and returns how many it deleted. Keep them longer than the processor retries a
// delivery (3 days at Stripe): a delivery of a reaped id would be taken for a new event.
func (db *DB) ReapWebhookEvents(ctx context.Context, retention time.Duration) (int64, error) {
	tag, err := db.pool.Exec(ctx, `DELETE FROM webhook_events WHERE received_at < clock_timestamp() - $1::interval AND NOT in_review`, retention)
	if err != nil {
		return 0, fmt.Errorf("store: reap webhook events: %w", interpretError(err))
	}
	return tag.RowsAffected(), nil
}

// WebhookEventsInReview returns up to limit processor events waiting in review (those that
// name a charge paygate does not have), oldest first, each with the event as received.
func (db *DB) WebhookEventsInReview(ctx context.Context, limit int) ([]reconcile.EventInReview, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT id, type, received_at, COALESCE(account, ''), COALESCE(charge_id, ''), COALESCE(payment_intent, ''),
			disposition, COALESCE(evidence, 'null')
		  FROM webhook_events WHERE in_review ORDER BY received_at, id LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("store: webhook events in review: %w", interpretError(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (reconcile.EventInReview, error) {
		var e reconcile.EventInReview
		err := r.Scan(&e.ID, &e.Type, &e.ReceivedAt, &e.Account, &e.ChargeID, &e.PaymentIntent, &e.Disposition, &e.Event)
		return e, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: webhook events in review: %w", interpretError(err))
	}
	return out, nil
}

// AcknowledgeWebhookEvent takes event id out of review: a person has looked. Its id is then
// kept as long as any other's. It returns ErrNotFound for an event not waiting in review.
func (db *DB) AcknowledgeWebhookEvent(ctx context.Context, id string) error {
	tag, err := db.pool.Exec(ctx, `UPDATE webhook_events SET in_review = false WHERE id = $1 AND in_review`, id)
	if err != nil {
		return fmt.Errorf("store: acknowledge webhook event: %w", interpretError(err))
	}
	if tag.RowsAffected() == 0 {
		return ErrNotFound
	}
	return nil
}
