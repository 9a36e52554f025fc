package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/reconcile"
)

// ReviewQueue returns the merchant's charges in review: the riskiest first (processor
// evidence contradicting a manual resolution), then the oldest charge first, each with every
// check made so far and the evidence of the last (of the review's entry, for a charge no
// check put there).
func (db *DB) ReviewQueue(ctx context.Context, merchantID string, limit int) ([]reconcile.ReviewItem, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT `+chargeColumns+`, COALESCE(r.review_reason, ''), r.review_rank, COALESCE(r.review_since, c.created_at),
			COALESCE((SELECT k.body FROM reconciliation_checks k WHERE k.charge_id = c.id ORDER BY k.n DESC LIMIT 1),
				(SELECT e.evidence FROM charge_events e WHERE e.charge_id = c.id AND e.action = 'review'
				  ORDER BY e.id DESC LIMIT 1)),
			(SELECT COALESCE(array_agg(k.body ORDER BY k.n), '{}') FROM reconciliation_checks k WHERE k.charge_id = c.id)
		  FROM reconciliations r JOIN charges c ON c.id = r.charge_id
		 WHERE r.in_review AND c.merchant_id = $1
		 ORDER BY r.review_rank DESC, c.created_at, c.id
		 LIMIT $2`, merchantID, limit)
	if err != nil {
		return nil, fmt.Errorf("store: review queue: %w", err)
	}
	defer rows.Close()
	var out []reconcile.ReviewItem
	for rows.Next() {
		var it reconcile.ReviewItem
		var checks [][]byte
		c, err := scanCharge(rowWithTail{rows, []any{&it.Reason, &it.Rank, &it.Since, &it.Evidence, &checks}})
		if err != nil {
			return nil, err
		}
		it.Charge = c
		for _, b := range checks {
			it.Checks = append(it.Checks, json.RawMessage(b))
		}
		out = append(out, it)
	}
	return out, rows.Err()
}

// rowWithTail scans a charge's columns followed by extra columns.
type rowWithTail struct {
	pgx.Row
	tail []any
}

func (r rowWithTail) Scan(dest ...any) error { return r.Row.Scan(append(dest, r.tail...)...) }

// ChargeTrail returns a merchant's charge's audit trail, oldest first, and its
// reconciliation (nil when it never had one). It returns charge.ErrNotFound for a charge
// of another merchant.
func (db *DB) ChargeTrail(ctx context.Context, merchantID, chargeID string) ([]charge.Event, *reconcile.State, error) {
	var ok bool
	if err := db.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM charges WHERE id = $1 AND merchant_id = $2)`,
		chargeID, merchantID).Scan(&ok); err != nil {
		return nil, nil, fmt.Errorf("store: charge trail: %w", err)
	}
	if !ok {
		return nil, nil, charge.ErrNotFound
	}
	rows, err := db.pool.Query(ctx, `
		SELECT at, actor, action, COALESCE(reason, ''), COALESCE(status_before, ''), COALESCE(status_after, ''),
			COALESCE(note, ''), evidence
		  FROM charge_trail WHERE charge_id = $1 ORDER BY at, seq`, chargeID)
	if err != nil {
		return nil, nil, fmt.Errorf("store: charge events: %w", err)
	}
	events, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (charge.Event, error) {
		var e charge.Event
		err := r.Scan(&e.At, &e.Actor, &e.Action, &e.Reason, &e.StatusBefore, &e.StatusAfter, &e.Note, &e.Evidence)
		return e, err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("store: charge events: %w", err)
	}
	var rec reconcile.State
	err = db.pool.QueryRow(ctx, `SELECT next_check_at, in_review, COALESCE(review_reason, ''), COALESCE(manual_outcome, '')
		FROM reconciliations WHERE charge_id = $1`, chargeID).Scan(&rec.NextCheckAt, &rec.InReview, &rec.ReviewReason, &rec.ManualOutcome)
	if errors.Is(err, pgx.ErrNoRows) {
		return events, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("store: reconciliation: %w", err)
	}
	rows, err = db.pool.Query(ctx, `SELECT body FROM reconciliation_checks WHERE charge_id = $1 ORDER BY n`, chargeID)
	if err != nil {
		return nil, nil, fmt.Errorf("store: reconciliation checks: %w", err)
	}
	checks, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return nil, nil, fmt.Errorf("store: reconciliation checks: %w", err)
	}
	rec.Checks = make([]json.RawMessage, 0, len(checks))
	for _, c := range checks {
		rec.Checks = append(rec.Checks, c)
	}
	return events, &rec, nil
}

// manualStandingSQL reads a charge's reconcile.ManualStanding, but its card's history.
const manualStandingSQL = `
	SELECT ` + chargeColumns + `, clock_timestamp(), COALESCE(r.in_review, false), COALESCE(r.review_reason, ''),
		r.last_inconclusive_at, r.last_check_at,
		COALESCE((SELECT k.body FROM reconciliation_checks k WHERE k.charge_id = c.id ORDER BY k.n DESC LIMIT 1),
			(SELECT e.evidence FROM charge_events e WHERE e.charge_id = c.id AND e.action = 'review' ORDER BY e.id DESC LIMIT 1)),
		(SELECT max(a.started_at + a.timeout_ms * interval '1 millisecond') FROM charge_attempts a WHERE a.charge_id = c.id),
		(SELECT k.locked_until FROM idempotency_keys k WHERE k.merchant_id = c.merchant_id AND k.key = c.idempotency_key
		    AND k.charge_id = c.id),
		(SELECT max(k.at) FROM reconciliation_checks k
		  WHERE k.charge_id = c.id AND k.body->'evidence' ? 'replay'
		    AND COALESCE((k.body->'evidence'->'replay'->>'http_status')::int, 0) = 0
		    AND k.body->'evidence'->'replay'->>'class' IS DISTINCT FROM 'not_sent'),
		` + holdersSQL + `
	  FROM charges c LEFT JOIN reconciliations r ON r.charge_id = c.id
	 WHERE c.id = $1 AND c.merchant_id = $2`

// manualResolutionSQL sets a charge's status as an operator resolved it.
const manualResolutionSQL = `
	UPDATE charges SET status = $2::text, live = $9, failure_code = $3, failure_retryable = $4, decline = $6, updated_at = $5, finalized_at = $5,
		reference_duplicate_of = COALESCE(NULLIF($7, ''), reference_duplicate_of),
		reattempt_duplicate_of = COALESCE(NULLIF($8, ''), reattempt_duplicate_of)
	 WHERE id = $1`

// ResolveManually implements reconcile.ResolveStore: one transaction that locks the charge,
// reads its standing, and applies the resolution decided on it with static statements.
func (db *DB) ResolveManually(ctx context.Context, merchantID, chargeID string, withHistory bool,
	plan func(reconcile.ManualStanding) (reconcile.ManualPlan, error)) (*charge.Charge, error) {
	var out *charge.Charge
	err := db.InTx(ctx, func(tx pgx.Tx) error {
		s, err := manualStanding(ctx, tx, merchantID, chargeID, withHistory)
		if err != nil {
			return err
		}
		p, err := plan(s)
		if err != nil {
			return err
		}
		res := p.Resolution
		var failCode *string
		var failRetry *bool
		if res.Failure != nil {
			failCode, failRetry = &res.Failure.Code, &res.Failure.Retryable
		}
		if _, err := tx.Exec(ctx, manualResolutionSQL, chargeID, string(res.Status), failCode, failRetry, s.Now,
			nullJSON(res.Decline), res.Duplicates.Reference, res.Duplicates.Reattempt, res.Status.Live()); err != nil {
			return fmt.Errorf("store: resolve charge: %w", err)
		}
		if _, err := tx.Exec(ctx, `
			UPDATE reconciliations SET manual_outcome = $2, manual_at = $3, in_review = false, review_rank = 0,
				review_reason = NULL, review_since = NULL WHERE charge_id = $1`, chargeID, string(res.Status), s.Now); err != nil {
			return fmt.Errorf("store: record manual resolution: %w", err)
		}
		if res.Card != nil {
			if err := cardOutcomeTx(ctx, tx, chargeID, res.Card); err != nil {
				return err
			}
		}
		if err := appendEvents(ctx, tx, chargeID, p.Events); err != nil {
			return err
		}
		out, err = chargeByID(ctx, tx, merchantID, chargeID)
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return nil, charge.ErrNotFound
	}
	return out, err
}

// manualStanding locks a merchant's charge and reads its reconcile.ManualStanding.
func manualStanding(ctx context.Context, tx pgx.Tx, merchantID, chargeID string, withHistory bool) (reconcile.ManualStanding, error) {
	var s reconcile.ManualStanding
	if _, err := tx.Exec(ctx, lockChargeSQL, chargeID); err != nil {
		return s, fmt.Errorf("store: lock charge: %w", interpretError(err))
	}
	f := &s.InFlight
	c, err := scanCharge(rowWithTail{tx.QueryRow(ctx, manualStandingSQL, chargeID, merchantID), []any{&s.Now, &s.InReview, &s.ReviewReason,
		&s.LastInconclusiveAt, &s.LastCheckAt, &s.Evidence, &f.AttemptsEnd, &f.LockedUntil, &f.ReplayAt,
		&s.Holders.Reference, &s.Holders.Reattempt}})
	if err != nil {
		return s, err
	}
	s.Charge = c
	if withHistory {
		if s.History, s.HistoryAt, err = othersHistory(ctx, tx, c); err != nil {
			return s, err
		}
	}
	return s, nil
}

// othersHistory returns the history of c's card without c's own attempt, and the time the
// history records that attempt at (when it records none, the time cardOutcomeTx will: the
// first send, else the creation).
func othersHistory(ctx context.Context, q rowsQuerier, c *charge.Charge) (decline.History, time.Time, error) {
	at := c.CreatedAt
	if c.FirstSentAt != nil {
		at = *c.FirstSentAt
	}
	if c.Card == nil {
		return nil, at, nil
	}
	all, err := cardHistory(ctx, q, c.ProcessorAccount, c.Card.Fingerprint)
	if err != nil {
		return nil, at, err
	}
	var h decline.History
	for _, a := range all {
		if a.Charge == c.ID {
			at = a.At
			continue
		}
		h = append(h, a)
	}
	return h, at, nil
}
