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
		SELECT r.charge_id, c.merchant_id FROM reconciliations r JOIN charges c ON c.id = r.charge_id
		 WHERE r.next_check_at <= clock_timestamp() AND (c.status = 'pending' OR r.manual_outcome IS NOT NULL)
		 ORDER BY r.next_check_at LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("store: due reconciliations: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (reconcile.Due, error) {
		var d reconcile.Due
		err := r.Scan(&d.ChargeID, &d.MerchantID)
		return d, err
	})
}

// ReconcileTarget returns what reconciliation needs of a charge: its identity at the
// processor, when its key was used, the operator's resolution and the earlier checks.
func (db *DB) ReconcileTarget(ctx context.Context, chargeID string) (reconcile.Charge, string, charge.Status, error) {
	var (
		rc       reconcile.Charge
		merchant string
		status   charge.Status
		first    *time.Time
		last     *time.Time
		manual   *string
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
		&rc.ProcessorRef, &rc.CreatedAt, &first, &last, &rc.Written, &manual, &merchant, &status)
	if err != nil {
		return rc, "", "", fmt.Errorf("store: reconcile target: %w", interpretError(err))
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
		return rc, "", "", fmt.Errorf("store: reconciliation checks: %w", err)
	}
	bodies, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return rc, "", "", fmt.Errorf("store: reconciliation checks: %w", err)
	}
	for _, b := range bodies {
		var chk reconcile.Check
		if err := json.Unmarshal(b, &chk); err != nil {
			return rc, "", "", fmt.Errorf("store: reconciliation check of %s: %w", chargeID, err)
		}
		rc.Checks = append(rc.Checks, chk)
	}
	return rc, merchant, status, nil
}

// CheckRecord is one reconciliation check to store, with what it changes.
type CheckRecord struct {
	ChargeID string
	Check    reconcile.Check
	// PaymentIntent is saved as the charge's processor_ref when it has none and the check's
	// decision shows it is the charge's own (see ownPaymentIntent).
	PaymentIntent string
	// NextCheckAt schedules the next check; zero for none.
	NextCheckAt time.Time
	// Review puts (or keeps) the charge in the review queue with ReviewReason; Rank 1 puts
	// it at the top (processor evidence contradicting a manual resolution).
	Review       bool
	ReviewReason string
	Rank         int
	// Resolve, when set, ends the charge: its new status and the fields that go with it.
	Resolve *Resolution
	// Actor goes to the audit trail.
	Actor string
}

// Resolution is the outcome a check proved.
type Resolution struct {
	Status  charge.Status
	Decline json.RawMessage
	Failure *charge.Failure
	Card    *charge.CardOutcome // the outcome for the card's history; nil drops its pending row
	// Reopen puts a manually resolved charge back to pending (evidence contradicts it).
	Reopen bool
}

// RecordCheck stores one reconciliation check and what it decided, in one transaction. It
// returns reconcile.ErrStale when the charge already has a check with that number: another
// reconciler recorded it first.
//
// Under the charge's lock it compares the charge's resolution with the one the check was
// decided against (r.Check.Manual): when an operator (or the charge's own run) resolved it
// after the check read it, the check is recorded as reconcile.AgainstManual decides for that
// resolution, never over it. Reopening a charge ends its manual resolution, and a charge in
// review at a higher rank (reopened) keeps its place until a check or an operator resolves it.
func (db *DB) RecordCheck(ctx context.Context, rec CheckRecord) error {
	return db.InTx(ctx, func(tx pgx.Tx) error {
		r := rec // each run of the transaction decides from the record as given
		var (
			status, manual, reason string
			inReview, duplicate    bool
			rank                   int
		)
		if err := tx.QueryRow(ctx, `
			SELECT c.status, COALESCE(r.manual_outcome, ''), COALESCE(r.in_review, false), COALESCE(r.review_rank, 0),
				COALESCE(r.review_reason, ''),
				c.reference_duplicate_of IS NOT NULL OR c.reattempt_duplicate_of IS NOT NULL
			  FROM charges c LEFT JOIN reconciliations r ON r.charge_id = c.id
			 WHERE c.id = $1
			 FOR UPDATE OF c`, r.ChargeID).Scan(&status, &manual, &inReview, &rank, &reason, &duplicate); err != nil {
			return fmt.Errorf("store: lock charge: %w", interpretError(err))
		}
		if settled := settledOutcome(charge.Status(status), manual); settled != "" && settled != r.Check.Manual {
			r = r.against(settled)
		}
		if duplicate && r.Resolve != nil && r.Resolve.Status == charge.StatusSucceeded {
			// A second payment for one order, now proven: it stays first in line until a
			// person refunds one and resolves it.
			r.Review, r.ReviewReason, r.Rank = true, ReasonDuplicatePayment, 1
		}
		if r.Resolve == nil && inReview && rank > r.Rank {
			// A reopened charge stays first in line until something resolves it.
			r.Review, r.ReviewReason, r.Rank = true, reason, rank
		}
		body, err := json.Marshal(r.Check)
		if err != nil {
			return fmt.Errorf("store: check body: %w", err)
		}
		var next *time.Time
		if !r.NextCheckAt.IsZero() {
			next = &r.NextCheckAt
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO reconciliation_checks (charge_id, n, at, kind, path, reason, body)
			VALUES ($1, $2, $3, $4, NULLIF($5, ''), NULLIF($6, ''), $7)`,
			r.ChargeID, r.Check.N, r.Check.At, string(r.Check.Decision.Kind), string(r.Check.Decision.Path),
			string(r.Check.Decision.Reason), body)
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" {
			return reconcile.ErrStale
		}
		if err != nil {
			return fmt.Errorf("store: record check: %w", err)
		}
		// A PaymentIntent becomes the charge's processor_ref only when it is the charge's: one
		// that does not match it (even when it reopens an operator's resolution), or one of
		// several, is evidence for a person, not a reference to show the merchant or to read
		// by from now on.
		if r.PaymentIntent != "" && ownPaymentIntent(r.Check.Decision) {
			if _, err := tx.Exec(ctx, `UPDATE charges SET processor_ref = $2 WHERE id = $1 AND processor_ref IS NULL`,
				r.ChargeID, r.PaymentIntent); err != nil {
				return fmt.Errorf("store: save processor_ref: %w", err)
			}
		}
		// A check that settled nothing lets an operator resolve the charge only if it looked
		// at the processor: one whose every read failed proves nothing.
		inconclusive := r.Resolve == nil && r.Check.Looked()
		reopen := r.Resolve != nil && r.Resolve.Reopen
		_, err = tx.Exec(ctx, `
			INSERT INTO reconciliations (charge_id, next_check_at, in_review, review_reason, review_rank, review_since,
				checks, last_check_at, last_inconclusive_at)
			VALUES ($1, $2, $3, NULLIF($4, ''), $5, CASE WHEN $3 THEN $6::timestamptz END, 1, $6,
				CASE WHEN $7 THEN $6::timestamptz END)
			ON CONFLICT (charge_id) DO UPDATE SET
				next_check_at = EXCLUDED.next_check_at,
				in_review = EXCLUDED.in_review,
				review_reason = CASE WHEN EXCLUDED.in_review THEN EXCLUDED.review_reason END,
				review_rank = CASE WHEN EXCLUDED.in_review THEN GREATEST(EXCLUDED.review_rank,
					CASE WHEN reconciliations.in_review THEN reconciliations.review_rank ELSE 0 END) ELSE 0 END,
				review_since = CASE WHEN NOT EXCLUDED.in_review THEN NULL
					WHEN reconciliations.in_review THEN reconciliations.review_since ELSE EXCLUDED.review_since END,
				checks = reconciliations.checks + 1,
				last_check_at = EXCLUDED.last_check_at,
				last_inconclusive_at = COALESCE(EXCLUDED.last_inconclusive_at, reconciliations.last_inconclusive_at),
				manual_outcome = CASE WHEN $8 THEN NULL ELSE reconciliations.manual_outcome END,
				manual_at = CASE WHEN $8 THEN NULL ELSE reconciliations.manual_at END`,
			r.ChargeID, next, r.Review, r.ReviewReason, r.Rank, r.Check.At, inconclusive, reopen)
		if err != nil {
			return fmt.Errorf("store: reconciliation state: %w", err)
		}
		if r.Review && status != string(charge.StatusPending) && !reopen {
			// A charge an operator resolved stays resolved until evidence contradicts it.
			return event(ctx, tx, r.ChargeID, actorOr(r.Actor), "review", r.ReviewReason, status, status, "", body)
		}
		if r.Resolve == nil {
			if r.Review {
				return event(ctx, tx, r.ChargeID, actorOr(r.Actor), "review", r.ReviewReason, status, status, "", body)
			}
			return nil
		}
		res := r.Resolve
		var failCode *string
		var failRetry *bool
		if res.Failure != nil {
			failCode, failRetry = &res.Failure.Code, &res.Failure.Retryable
		}
		// A charge brought back to life (reopened, or found succeeded) while another live
		// charge took its reference, or another charge of its reattempt chain is live, is a
		// duplicate that happened: it names the other charge, which the uniqueness of live
		// references and of live reattempts then leaves aside (migrations 0011, 0013).
		dup, err := revivedDuplicates(ctx, tx, r.ChargeID, charge.Status(status), res.Status)
		if err != nil {
			return err
		}
		// Only a declined charge carries a decline block: one that evidence brought back to
		// pending, or proved succeeded or failed, loses the block of its earlier decline.
		_, err = tx.Exec(ctx, `
			UPDATE charges SET status = $2, decline = CASE WHEN $2 = 'declined' THEN COALESCE($3, decline) END,
				failure_code = $4, failure_retryable = $5,
				updated_at = clock_timestamp(),
				finalized_at = CASE WHEN $2 IN ('succeeded', 'declined', 'failed') THEN clock_timestamp() END,
				reference_duplicate_of = COALESCE($6, reference_duplicate_of),
				reattempt_duplicate_of = COALESCE($7, reattempt_duplicate_of)
			 WHERE id = $1`,
			r.ChargeID, string(res.Status), nullJSON(res.Decline), failCode, failRetry, dup.reference, dup.reattempt)
		if err != nil {
			return fmt.Errorf("store: resolve charge: %w", err)
		}
		if err := dup.record(ctx, tx, r.ChargeID, actorOr(r.Actor), status, string(res.Status)); err != nil {
			return err
		}
		if err := cardOutcomeTx(ctx, tx, r.ChargeID, res.Card); err != nil {
			return err
		}
		action, reason := "resolved", string(r.Check.Decision.Path)
		if res.Reopen {
			action, reason = "reopened", r.ReviewReason
		}
		return event(ctx, tx, r.ChargeID, actorOr(r.Actor), action, reason, status, string(res.Status), "", body)
	})
}

// ownPaymentIntent reports whether the PaymentIntent of decision d is the charge's own, to
// save as its processor_ref: not one that differs from the charge (d.Mismatch names the
// fields, and stays named when the decision is reread against an operator's resolution), nor
// one of several.
func ownPaymentIntent(d reconcile.Decision) bool {
	return d.Reason != reconcile.ReasonMismatch && d.Reason != reconcile.ReasonDuplicate &&
		len(d.Mismatch) == 0 && len(d.PaymentIntents) == 0
}

// duplicates names the live charges a charge brought back to life duplicates: the one that
// holds its reference, and the one of its reattempt chain (nil: none).
type duplicates struct {
	reference, reattempt *string
}

// revivedDuplicates returns, for a charge going from status from to status to, the live
// charges it duplicates when the change brings it back to life (a success found after an
// operator's "failed" or "declined", a reopening): the one that holds its reference, and one
// of its reattempt chain (another reattempt, or the chain's original; one not itself marked
// as a duplicate when there is one). Two payments for one order happened. A charge already
// marked keeps the charge it names. None when the change brings nothing back to life.
func revivedDuplicates(ctx context.Context, tx pgx.Tx, chargeID string, from, to charge.Status) (duplicates, error) {
	var d duplicates
	if !isLive(to) || isLive(from) {
		return d, nil
	}
	err := tx.QueryRow(ctx, `
		SELECT
			(SELECT o.id FROM charges o
			  WHERE o.merchant_id = c.merchant_id AND o.reference = c.reference AND o.id <> c.id
			    AND c.reference_duplicate_of IS NULL
			    AND o.reference_duplicate_of IS NULL AND o.status IN ('processing', 'pending', 'succeeded')
			  LIMIT 1),
			(SELECT o.id FROM charges o
			  WHERE o.merchant_id = c.merchant_id AND o.id <> c.id AND c.reattempt_duplicate_of IS NULL
			    AND (o.id = COALESCE(c.chain, c.id) OR (o.chain = COALESCE(c.chain, c.id) AND o.reattempt_of IS NOT NULL))
			    AND o.status IN ('processing', 'pending', 'succeeded')
			  ORDER BY o.reattempt_duplicate_of IS NOT NULL, o.created_at, o.id
			  LIMIT 1)
		  FROM charges c WHERE c.id = $1`, chargeID).Scan(&d.reference, &d.reattempt)
	if err != nil {
		return d, fmt.Errorf("store: live duplicates: %w", interpretError(err))
	}
	return d, nil
}

// record appends to the charge's trail one event per live charge it duplicates.
func (d duplicates) record(ctx context.Context, tx pgx.Tx, chargeID, actor, before, after string) error {
	if d.reference != nil {
		note := "the processor shows this charge alive while live charge " + *d.reference +
			" holds its reference: two payments for one order; refund one"
		if err := event(ctx, tx, chargeID, actor, "duplicate_reference", "", before, after, note, nil); err != nil {
			return err
		}
	}
	if d.reattempt != nil {
		note := "this charge came back to life while charge " + *d.reattempt +
			" of its reattempt chain is live: two payments for one order; refund one"
		if err := event(ctx, tx, chargeID, actor, "duplicate_reattempt", "", before, after, note, nil); err != nil {
			return err
		}
	}
	return nil
}

// ReasonDuplicatePayment is the review reason of a charge found paid while another live charge
// holds its reference, or another charge of its reattempt chain is live: two payments for one
// order, one to refund.
const ReasonDuplicatePayment = "duplicate_payment"

// isLive reports whether a charge in status s holds its reference and its place in its
// reattempt chain (see charges_live_reference, charges_live_reattempt).
func isLive(s charge.Status) bool {
	return s == charge.StatusProcessing || s == charge.StatusPending || s == charge.StatusSucceeded
}

// settledOutcome is the resolution a check must not overwrite: the operator's, else the
// charge's final status (empty for a charge still pending or processing).
func settledOutcome(status charge.Status, manual string) reconcile.Outcome {
	switch {
	case manual != "":
		return reconcile.Outcome(manual)
	case status.Final():
		return reconcile.Outcome(status)
	}
	return ""
}

// against returns r as the check's decision stands against a resolution made after the check
// read the charge (reconcile.AgainstManual): evidence of another outcome reopens the charge
// at the top of the review queue, as the janitor records ReasonContradictsManual; anything
// else changes no status.
func (r CheckRecord) against(settled reconcile.Outcome) CheckRecord {
	d := reconcile.AgainstManual(settled, r.Check.Decision)
	r.Check.Decision, r.Check.Manual = d, settled
	r.NextCheckAt, r.Resolve = d.NextCheckAt, nil
	r.Review, r.ReviewReason, r.Rank = d.Kind == reconcile.KindReview, "", 0
	if r.Review {
		r.ReviewReason = string(d.Reason)
	}
	if d.Reason == reconcile.ReasonContradictsManual {
		r.Reopen()
	}
	return r
}

// Reopen makes r reopen a charge on evidence against its resolution: back to pending (its
// card attempt too), first in line in the review queue.
func (r *CheckRecord) Reopen() {
	r.Rank = 1
	r.Resolve = &Resolution{Status: charge.StatusPending, Reopen: true, Card: &charge.CardOutcome{Outcome: decline.Pending}}
}

func nullJSON(b json.RawMessage) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// cardOutcomeTx writes what a resolved outcome means for the card's history: the charge's
// attempt follows the outcome, or goes when the charge never reached the card network. A
// charge whose attempt is not in the history (it waited for the cardholder's authentication,
// which is no authorization) gets one, at its first send, when the outcome is an
// authorization's. The card's state learns of it: an attempt it folded that changed makes it
// stale, and a refusal puts the card on record, under the card's lock.
func cardOutcomeTx(ctx context.Context, tx pgx.Tx, chargeID string, co *charge.CardOutcome) error {
	var account, fingerprint *string
	if err := tx.QueryRow(ctx, `SELECT processor_account, card_fingerprint FROM charges WHERE id = $1`, chargeID).
		Scan(&account, &fingerprint); err != nil {
		return fmt.Errorf("store: card history: %w", interpretError(err))
	}
	refusal := co != nil && co.Outcome.Refusal()
	if refusal && account != nil && fingerprint != nil {
		if _, err := tx.Exec(ctx, cardLockSQL, *account, *fingerprint); err != nil {
			return fmt.Errorf("store: lock card: %w", err)
		}
	}
	outcome, class, category, mac, capReached, hold := "", "", 0, 0, false, ""
	if co != nil {
		outcome, class, category, mac, capReached, hold = string(co.Outcome), string(co.Class), int(co.Category), int(co.MAC),
			co.CapReached, string(co.Hold)
	}
	_, err := tx.Exec(ctx, `
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
		 WHERE (card_states.through_at, card_states.through_charge) >= (EXCLUDED.through_at, $1)`,
		chargeID, outcome, class, category, mac, capReached, refusal, hold)
	if err != nil {
		return fmt.Errorf("store: card history: %w", err)
	}
	return nil
}

// event appends to a charge's audit trail.
func event(ctx context.Context, tx pgx.Tx, chargeID, actor, action, reason, before, after, note string, evidence []byte) error {
	_, err := tx.Exec(ctx, `
		INSERT INTO charge_events (charge_id, actor, action, reason, status_before, status_after, note, evidence)
		VALUES ($1, $2, $3, NULLIF($4, ''), NULLIF($5, ''), NULLIF($6, ''), NULLIF($7, ''), $8)`,
		chargeID, actor, action, reason, before, after, note, nullJSON(evidence))
	if err != nil {
		return fmt.Errorf("store: audit trail: %w", err)
	}
	return nil
}
