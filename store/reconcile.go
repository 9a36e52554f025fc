package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/reconcile"
)

// DueReconciliations returns up to limit charges whose next reconciliation check is due —
// pending ones, and manually resolved ones whose schedule still runs — oldest due first.
func (db *DB) DueReconciliations(ctx context.Context, limit int) ([]reconcile.Due, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT r.charge_id, c.merchant_id, COALESCE(c.processor_account, ''), c.processor_ref IS NOT NULL,
			extract(epoch FROM clock_timestamp() - r.next_check_at)::float8
		  FROM reconciliations r JOIN charges c ON c.id = r.charge_id
		 WHERE r.next_check_at <= clock_timestamp() AND (c.status = 'pending' OR r.manual_outcome IS NOT NULL)
		 ORDER BY r.next_check_at LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("store: due reconciliations: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (reconcile.Due, error) {
		var d reconcile.Due
		var waited float64
		err := r.Scan(&d.ChargeID, &d.MerchantID, &d.Account, &d.RefKnown, &waited)
		d.Waited = time.Duration(waited * float64(time.Second))
		return d, err
	})
}

// claimSweepSQL claims the due charges of one processor account whose PaymentIntent id is
// unknown, oldest due first, skipping those another transaction holds: their next check moves
// to the lease's end.
const claimSweepSQL = `
	WITH due AS (
		SELECT r.charge_id FROM reconciliations r JOIN charges c ON c.id = r.charge_id
		 WHERE r.next_check_at <= clock_timestamp() AND (c.status = 'pending' OR r.manual_outcome IS NOT NULL)
		   AND c.processor_account = $1 AND c.processor_ref IS NULL
		 ORDER BY r.next_check_at LIMIT $2
		   FOR UPDATE OF r SKIP LOCKED
	)
	UPDATE reconciliations r SET next_check_at = clock_timestamp() + $3::interval
	  FROM due WHERE r.charge_id = due.charge_id
	RETURNING r.charge_id`

// ClaimSweep implements reconcile.JanitorStore: it claims up to limit due charges of account
// whose PaymentIntent id is unknown for lease, and returns their ids.
func (db *DB) ClaimSweep(ctx context.Context, account string, limit int, lease time.Duration) ([]string, error) {
	rows, err := db.pool.Query(ctx, claimSweepSQL, account, limit, lease)
	if err != nil {
		return nil, fmt.Errorf("store: claim a sweep: %w", interpretError(err))
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("store: claim a sweep: %w", interpretError(err))
	}
	return ids, nil
}

// ReconcileTarget returns what reconciliation needs of a charge: its identity at the
// processor, when its key was used, the operator's resolution and the earlier checks, with
// its merchant and status.
func (db *DB) ReconcileTarget(ctx context.Context, chargeID string) (reconcile.Target, error) {
	var (
		t      reconcile.Target
		rc     = &t.Charge
		first  *time.Time
		last   *time.Time
		manual *string
	)
	err := db.pool.QueryRow(ctx, `
		SELECT c.id, COALESCE(NULLIF(c.chain, c.id), ''), c.amount, c.currency, COALESCE(c.customer, ''), c.payment_method,
			COALESCE(c.processor_account, ''), COALESCE(c.processor_ref, ''), c.created_at, c.first_sent_at,
			(SELECT max(a.started_at) FROM charge_attempts a WHERE a.charge_id = c.id),
			EXISTS (SELECT 1 FROM charge_attempts a WHERE a.charge_id = c.id AND a.class <> 'not_sent'),
			r.manual_outcome, c.merchant_id, c.status
		  FROM charges c LEFT JOIN reconciliations r ON r.charge_id = c.id
		 WHERE c.id = $1`, chargeID,
	).Scan(&rc.ID, &rc.RootChargeID, &rc.Amount, &rc.Currency, &rc.Customer, &rc.PaymentMethod, &rc.Account,
		&rc.ProcessorRef, &rc.CreatedAt, &first, &last, &rc.Written, &manual, &t.MerchantID, &t.Status)
	if err != nil {
		return t, fmt.Errorf("store: reconcile target: %w", interpretError(err))
	}
	if first != nil {
		rc.FirstSentAt = *first
	}
	if last != nil {
		rc.LastSentAt = *last
	}
	if manual != nil {
		rc.Manual = reconcile.Outcome(*manual)
	}
	rows, err := db.pool.Query(ctx, `SELECT body FROM reconciliation_checks WHERE charge_id = $1 ORDER BY n`, chargeID)
	if err != nil {
		return t, fmt.Errorf("store: reconciliation checks: %w", err)
	}
	bodies, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return t, fmt.Errorf("store: reconciliation checks: %w", err)
	}
	for _, b := range bodies {
		var chk reconcile.Check
		if err := json.Unmarshal(b, &chk); err != nil {
			return t, fmt.Errorf("store: reconciliation check of %s: %w", chargeID, err)
		}
		rc.Checks = append(rc.Checks, chk)
	}
	return t, nil
}

// lockChargeSQL takes a charge's row lock: the statements after it read what committed
// before it.
const lockChargeSQL = `SELECT id FROM charges WHERE id = $1 FOR UPDATE`

// holdersSQL reads the other live charges that hold charge c's reference, and a place in its
// reattempt chain (another reattempt, or the chain's original; one not itself marked as a
// duplicate when there is one).
const holdersSQL = `
	COALESCE((SELECT o.id FROM charges o
	  WHERE o.merchant_id = c.merchant_id AND o.reference = c.reference AND o.id <> c.id
	    -- live, as charges_live_reference's predicate says it (not the status list it is
	    -- generated from), so that the plan reads that index and not the whole table.
	    AND o.reference_duplicate_of IS NULL AND o.live
	  LIMIT 1), ''),
	COALESCE((SELECT o.id FROM charges o
	  WHERE o.merchant_id = c.merchant_id AND o.id <> c.id
	    AND (o.id = COALESCE(c.chain, c.id) OR (o.chain = COALESCE(c.chain, c.id) AND o.reattempt_of IS NOT NULL))
	    AND o.status IN ('processing', 'pending', 'succeeded')
	  ORDER BY o.reattempt_duplicate_of IS NOT NULL, o.created_at, o.id
	  LIMIT 1), '')`

// standingSQL reads a charge's reconcile.Standing.
const standingSQL = `
	SELECT ` + chargeColumns + `, COALESCE(r.manual_outcome, ''), COALESCE(r.in_review, false),
		COALESCE(r.review_reason, ''), COALESCE(r.review_rank, 0), r.review_since, ` + holdersSQL + `
	  FROM charges c LEFT JOIN reconciliations r ON r.charge_id = c.id
	 WHERE c.id = $1`

// insertCheckSQL appends a check to its charge's reconciliation trail.
const insertCheckSQL = `
	INSERT INTO reconciliation_checks (charge_id, n, at, kind, path, reason, body)
	VALUES ($1, $2, $3, $4, NULLIF($5, ''), NULLIF($6, ''), $7)`

// reconciliationSQL writes a charge's reconciliation state after a check: its next check, its
// place in the review queue, the check's time (and whether it was inconclusive), and the end
// of an operator's resolution.
const reconciliationSQL = `
	INSERT INTO reconciliations (charge_id, next_check_at, in_review, review_reason, review_rank, review_since,
		checks, last_check_at, last_inconclusive_at)
	VALUES ($1, $2, $3, NULLIF($4, ''), $5, $6, 1, $7, CASE WHEN $8 THEN $7::timestamptz END)
	ON CONFLICT (charge_id) DO UPDATE SET
		next_check_at = EXCLUDED.next_check_at,
		in_review = EXCLUDED.in_review,
		review_reason = EXCLUDED.review_reason,
		review_rank = EXCLUDED.review_rank,
		review_since = EXCLUDED.review_since,
		checks = reconciliations.checks + 1,
		last_check_at = EXCLUDED.last_check_at,
		last_inconclusive_at = COALESCE(EXCLUDED.last_inconclusive_at, reconciliations.last_inconclusive_at),
		manual_outcome = CASE WHEN $9 THEN NULL ELSE reconciliations.manual_outcome END,
		manual_at = CASE WHEN $9 THEN NULL ELSE reconciliations.manual_at END`

// resolveSQL sets a charge's status as a check proved it. Only a declined charge carries a
// decline block: one that evidence brought back to pending, or proved succeeded or failed,
// loses the block of its earlier decline. A charge brought back to life names the live
// charges it duplicates, which the uniqueness of live references and of live reattempts then
// leaves aside (migrations 0011, 0013).
const resolveSQL = `
	UPDATE charges SET status = $2::text, live = $8, decline = CASE WHEN $2 = 'declined' THEN COALESCE($3, decline) END,
		failure_code = $4, failure_retryable = $5,
		updated_at = clock_timestamp(),
		finalized_at = CASE WHEN $2 IN ('succeeded', 'declined', 'failed') THEN clock_timestamp() END,
		reference_duplicate_of = COALESCE(NULLIF($6, ''), reference_duplicate_of),
		reattempt_duplicate_of = COALESCE(NULLIF($7, ''), reattempt_duplicate_of)
	 WHERE id = $1`

// RecordCheck implements reconcile.Store: one transaction that locks the charge, reads its
// standing, and applies the plan decided on it with static statements. A check number the
// charge already has is reconcile.ErrStale.
func (db *DB) RecordCheck(ctx context.Context, q reconcile.StandingQuery, plan func(reconcile.Standing) (reconcile.CheckPlan, error)) error {
	return db.InTx(ctx, func(tx pgx.Tx) error {
		s, err := standing(ctx, tx, q)
		if err != nil {
			return err
		}
		p, err := plan(s)
		if err != nil {
			return err
		}
		return applyCheck(ctx, tx, q.ChargeID, p)
	})
}

// standing locks a charge and reads its reconcile.Standing.
func standing(ctx context.Context, tx pgx.Tx, q reconcile.StandingQuery) (reconcile.Standing, error) {
	var s reconcile.Standing
	if _, err := tx.Exec(ctx, lockChargeSQL, q.ChargeID); err != nil {
		return s, fmt.Errorf("store: lock charge: %w", interpretError(err))
	}
	var manual string
	c, err := scanCharge(rowWithTail{tx.QueryRow(ctx, standingSQL, q.ChargeID), []any{&manual, &s.InReview,
		&s.ReviewReason, &s.ReviewRank, &s.ReviewSince, &s.Holders.Reference, &s.Holders.Reattempt}})
	if err != nil {
		return s, fmt.Errorf("store: charge standing: %w", err)
	}
	s.Charge, s.Manual = c, reconcile.Outcome(manual)
	if q.CardHistory {
		if s.History, s.HistoryAt, err = othersHistory(ctx, tx, c); err != nil {
			return s, err
		}
		// A decline may be a possible duplicate: the payments that may be its order's first.
		if pq := charge.PossibleDuplicateQuery(c, decline.HoldNoReattempt, c.CreatedAt); pq != nil {
			if s.Earlier, err = payments(ctx, tx, *pq); err != nil {
				return s, err
			}
		}
	}
	return s, nil
}

// applyCheck writes a check's plan, its statements pipelined in one round trip.
func applyCheck(ctx context.Context, tx pgx.Tx, chargeID string, p reconcile.CheckPlan) error {
	d := p.Check.Decision
	b := &pgx.Batch{}
	b.Queue(insertCheckSQL, chargeID, p.Check.N, p.Check.At, string(d.Kind), string(d.Path), string(d.Reason), []byte(p.Body))
	if p.ProcessorRef != "" {
		b.Queue(`UPDATE charges SET processor_ref = $2 WHERE id = $1 AND processor_ref IS NULL`, chargeID, p.ProcessorRef)
	}
	var next *time.Time
	if !p.NextCheckAt.IsZero() {
		next = &p.NextCheckAt
	}
	b.Queue(reconciliationSQL, chargeID, next, p.Review, p.ReviewReason, p.ReviewRank, p.ReviewSince,
		p.Check.At, p.Inconclusive, p.EndManual)
	if res := p.Resolve; res != nil {
		var failCode *string
		var failRetry *bool
		if res.Failure != nil {
			failCode, failRetry = &res.Failure.Code, &res.Failure.Retryable
		}
		b.Queue(resolveSQL, chargeID, string(res.Status), nullJSON(res.Decline), failCode, failRetry,
			res.Duplicates.Reference, res.Duplicates.Reattempt, res.Status.Live())
		queueCardOutcome(b, chargeID, res.Card)
	}
	queueEvents(b, chargeID, p.Events)
	err := sendBatch(ctx, tx, b)
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.TableName == "reconciliation_checks" {
		return reconcile.ErrStale // another reconciler recorded this check's number first
	}
	if err != nil {
		return fmt.Errorf("store: record check: %w", err)
	}
	return nil
}

// sendBatch runs b's statements in tx, pipelined, and returns the first error.
func sendBatch(ctx context.Context, tx pgx.Tx, b *pgx.Batch) error {
	br := tx.SendBatch(ctx, b)
	var err error
	for range b.Len() {
		if _, err = br.Exec(); err != nil {
			break
		}
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return err
}

func nullJSON(b json.RawMessage) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// cardOutcomeSQL writes what a resolved outcome means for the card's history (see
// queueCardOutcome).
const cardOutcomeSQL = `
	WITH cur AS (SELECT card_at, card_outcome FROM charges WHERE id = $1),
	u AS (
		UPDATE charges SET
			card_outcome = CASE WHEN $2 = '' THEN NULL WHEN $2 = 'pending' AND card_outcome IS NULL THEN NULL ELSE $2 END,
			card_at = CASE WHEN card_outcome IS NULL THEN COALESCE(first_sent_at, created_at) ELSE card_at END,
			card_class = NULLIF($3, ''), card_category = NULLIF($4::int, 0), card_mac = NULLIF($5::int, 0),
			card_cap_reached = $6, card_settled_at = CASE WHEN $2 NOT IN ('', 'pending') THEN clock_timestamp() END,
			card_hold = CASE WHEN $2 NOT IN ('', 'pending') THEN NULLIF($8, '') END
		 WHERE id = $1 AND (card_outcome IS NOT NULL OR $2 NOT IN ('', 'pending'))
		   AND card_fingerprint IS NOT NULL AND card_network IS NOT NULL
		RETURNING processor_account, card_fingerprint, card_at
	),
	folded AS (
		UPDATE card_states s SET stale = true, version = s.version + 1 FROM u
		 WHERE NOT $7 AND s.processor_account = u.processor_account AND s.fingerprint = u.card_fingerprint
		   AND (s.through_at, s.through_charge) >= (u.card_at, $1)
	)
	INSERT INTO card_states (processor_account, fingerprint, through_at, through_charge, stale)
	SELECT u.processor_account, u.card_fingerprint, u.card_at, '', false FROM u WHERE $7 AND u.processor_account IS NOT NULL
	ON CONFLICT (processor_account, fingerprint) DO UPDATE SET stale = true, version = card_states.version + 1
	 WHERE (card_states.through_at, card_states.through_charge) >= (EXCLUDED.through_at, $1)`

// chargeCardLockSQL takes the lock of charge $1's card (cardLockSQL's) when it has one.
const chargeCardLockSQL = `SELECT pg_advisory_xact_lock(hashtextextended(processor_account || '/' || card_fingerprint, 7263))
	  FROM charges WHERE id = $1 AND processor_account IS NOT NULL AND card_fingerprint IS NOT NULL`

// queueCardOutcome queues what a resolved outcome means for the card's history: the charge's
// attempt follows the outcome, or goes when the charge never reached the card network. A
// charge whose attempt is not in the history (it waited for the cardholder's authentication,
// which is no authorization) gets one, at its first send, when the outcome is an
// authorization's. The card's state learns of it: an attempt it folded that changed makes it
// stale, and a refusal puts the card on record, under the card's lock.
func queueCardOutcome(b *pgx.Batch, chargeID string, co *charge.CardOutcome) {
	refusal := co != nil && co.Outcome.Refusal()
	if refusal {
		b.Queue(chargeCardLockSQL, chargeID)
	}
	outcome, class, category, mac, capReached, hold := "", "", 0, 0, false, ""
	if co != nil {
		outcome, class, category, mac, capReached, hold = string(co.Outcome), string(co.Class), int(co.Category), int(co.MAC),
			co.CapReached, string(co.Hold)
	}
	b.Queue(cardOutcomeSQL, chargeID, outcome, class, category, mac, capReached, refusal, hold)
}

// cardOutcomeTx writes what queueCardOutcome queues.
func cardOutcomeTx(ctx context.Context, tx pgx.Tx, chargeID string, co *charge.CardOutcome) error {
	b := &pgx.Batch{}
	queueCardOutcome(b, chargeID, co)
	if err := sendBatch(ctx, tx, b); err != nil {
		return fmt.Errorf("store: card history: %w", err)
	}
	return nil
}

// queueEvents queues events for a charge's audit trail, in order.
func queueEvents(b *pgx.Batch, chargeID string, events []charge.Event) {
	for _, e := range events {
		b.Queue(eventSQL, chargeID, actorOr(e.Actor), e.Action, e.Reason, e.StatusBefore, e.StatusAfter, e.Note, nullJSON(e.Evidence))
	}
}

// appendEvents appends events to a charge's audit trail, in order.
func appendEvents(ctx context.Context, tx pgx.Tx, chargeID string, events []charge.Event) error {
	b := &pgx.Batch{}
	queueEvents(b, chargeID, events)
	if err := sendBatch(ctx, tx, b); err != nil {
		return fmt.Errorf("store: audit trail: %w", err)
	}
	return nil
}

// eventSQL appends to a charge's audit trail.
const eventSQL = `
	INSERT INTO charge_events (charge_id, actor, action, reason, status_before, status_after, note, evidence)
	VALUES ($1, $2, $3, NULLIF($4, ''), NULLIF($5, ''), NULLIF($6, ''), NULLIF($7, ''), $8)`

// event appends to a charge's audit trail.
func event(ctx context.Context, tx pgx.Tx, chargeID, actor, action, reason, before, after, note string, evidence []byte) error {
	_, err := tx.Exec(ctx, eventSQL, chargeID, actor, action, reason, before, after, note, nullJSON(evidence))
	if err != nil {
		return fmt.Errorf("store: audit trail: %w", err)
	}
	return nil
}
