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
)

// chargeColumns are a charge as scanCharge reads it (c is the charges row).
const chargeColumns = `c.id, c.merchant_id, c.amount, c.currency, c.payment_method, COALESCE(c.customer, ''),
	COALESCE(c.reference, ''), c.initiator, c.reattempt_mode, COALESCE(c.reattempt_of, ''), c.metadata, c.status,
	COALESCE(c.processor_account, ''), COALESCE(c.processor_ref, ''), c.failure_code,
	c.failure_retryable, c.decline, c.attempts, c.first_sent_at, c.created_at, c.updated_at,
	COALESCE(c.idempotency_key, ''), COALESCE(c.chain, c.id), c.card_fingerprint, COALESCE(c.card_network, ''),
	COALESCE(c.card_exp_month, 0), COALESCE(c.card_exp_year, 0), c.next_reattempt_at, COALESCE(c.reference_duplicate_of, ''),
	COALESCE(c.reattempt_duplicate_of, ''), CASE WHEN c.card_outcome IS NOT NULL THEN c.card_at END`

func scanCharge(row pgx.Row) (*charge.Charge, error) {
	var (
		c         charge.Charge
		meta      []byte
		failCode  *string
		failRetry *bool
		decline   []byte
		fpr       *string
		card      charge.Card
	)
	err := row.Scan(&c.ID, &c.MerchantID, &c.Amount, &c.Currency, &c.PaymentMethod, &c.Customer,
		&c.Reference, &c.Initiator, &c.ReattemptMode, &c.ReattemptOf, &meta, &c.Status,
		&c.ProcessorAccount, &c.ProcessorRef, &failCode,
		&failRetry, &decline, &c.Attempts, &c.FirstSentAt, &c.CreatedAt, &c.UpdatedAt,
		&c.IdempotencyKey, &c.Chain, &fpr, &card.Network, &card.ExpMonth, &card.ExpYear, &c.NextReattemptAt,
		&c.ReferenceDuplicateOf, &c.ReattemptDuplicateOf, &c.CardAt)
	if err != nil {
		return nil, interpretError(err)
	}
	c.ProcessorKey = charge.ProcessorKey(c.ID)
	if len(meta) > 0 && string(meta) != "{}" {
		if err := json.Unmarshal(meta, &c.Metadata); err != nil {
			return nil, fmt.Errorf("store: charge %s metadata: %w", c.ID, err)
		}
	}
	if fpr != nil {
		card.Fingerprint = *fpr
		c.Card = &card
	}
	if failCode != nil {
		c.Failure = &charge.Failure{Code: *failCode, Retryable: failRetry != nil && *failRetry}
	}
	if len(decline) > 0 {
		c.Decline = json.RawMessage(decline)
	}
	return &c, nil
}

// statement runs one atomic statement: on its own in production; inside a savepoint when
// the store runs in a test transaction, so that its failure leaves the transaction usable.
func (db *DB) statement(ctx context.Context, fn func(q querier) error) error {
	if db.raw != nil {
		return fn(db.pool)
	}
	return pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error { return fn(tx) })
}

// finishGuard keeps a run's outcome from replacing one settled without it. A run whose key's
// lock expired while it stalled may finish after the completer, a retry, reconciliation or an
// operator settled its charge: the charge then keeps its outcome. A charge takes any outcome
// while processing, the status it already has, and while pending only an approval or a
// decline: never failed once pending (uncertainty is sticky).
const finishGuard = `
	   AND (status = 'processing' OR status = $3 OR (status = 'pending' AND $3 IN ('succeeded', 'declined')))`

// finishSet is what a run's outcome sets in its charge's row: status, attempts, card
// attempt and stored answer; the first outcome also in outcome_* (charge_trail derives its
// event from them). A heap-only update: no indexed column changes, unless the charge moved
// to another processor account or card.
const finishSet = `
			status = $3::text, live = $24, processor_ref = COALESCE(NULLIF($4, ''), processor_ref),
			processor_account = COALESCE(NULLIF($5, ''), processor_account), failure_code = $6,
			failure_retryable = $7, decline = $8, attempts = attempts + $9,
			-- Appended as text: the log's closing bracket gives way to the new attempts.
			attempt_log = CASE WHEN $9 = 0 THEN attempt_log WHEN attempt_log IS NULL THEN $10::text
				ELSE left(attempt_log, -1) || ',' || substr($10::text, 2) END,
			first_sent_at = CASE WHEN $9 > 0 THEN COALESCE(first_sent_at, $11) ELSE first_sent_at END,
			updated_at = clock_timestamp(),
			finalized_at = CASE WHEN $3 IN ('succeeded', 'declined', 'failed') THEN clock_timestamp() END,
			next_reattempt_id = COALESCE($12, next_reattempt_id), next_reattempt_at = COALESCE($13, next_reattempt_at),
			card_outcome = CASE $14 WHEN '' THEN card_outcome WHEN 'none' THEN NULL ELSE $14 END,
			card_class = CASE $14 WHEN '' THEN card_class WHEN 'none' THEN NULL ELSE NULLIF($15, '') END,
			card_category = CASE $14 WHEN '' THEN card_category WHEN 'none' THEN NULL ELSE NULLIF($16::int, 0) END,
			card_mac = CASE $14 WHEN '' THEN card_mac WHEN 'none' THEN NULL ELSE NULLIF($17::int, 0) END,
			card_cap_reached = CASE $14 WHEN '' THEN card_cap_reached ELSE $18 END,
			card_hold = CASE $14 WHEN '' THEN card_hold WHEN 'none' THEN NULL ELSE NULLIF($23, '') END,
			card_settled_at = CASE $14 WHEN '' THEN card_settled_at WHEN 'pending' THEN NULL WHEN 'none' THEN NULL
				ELSE clock_timestamp() END,
			card_fingerprint = COALESCE($19, card_fingerprint),
			response_status = $20, response_body = $21,
			outcome_at = CASE WHEN outcome_at IS NULL AND status = 'processing' AND $3 <> 'processing'
				THEN clock_timestamp() ELSE outcome_at END,
			outcome_status = CASE WHEN outcome_at IS NULL AND status = 'processing' AND $3 <> 'processing'
				THEN $3 ELSE outcome_status END,
			outcome_reason = CASE WHEN outcome_at IS NULL AND status = 'processing' AND $3 <> 'processing'
				THEN NULLIF($22, '') ELSE outcome_reason END
`

// finishHeadSQL is the part of a run's outcome every outcome writes: its row (finishSet) and
// the audit event of a change of status after the first outcome. It names the charge's old
// row cur and its new one u.
const finishHeadSQL = `
	WITH cur AS (
		SELECT status, outcome_at, card_at, processor_account, card_fingerprint FROM charges
		 WHERE id = $1 AND merchant_id = $2
	),
	u AS (
		UPDATE charges SET ` + finishSet + `
		 WHERE id = $1 AND merchant_id = $2` + finishGuard + `
		RETURNING processor_account, card_fingerprint
	),
	ev AS (
		INSERT INTO charge_events (charge_id, actor, action, reason, status_before, status_after)
		SELECT $1, 'gateway', 'outcome', NULLIF($22, ''), cur.status, $3 FROM cur
		 WHERE cur.status IS DISTINCT FROM $3 AND NOT (cur.outcome_at IS NULL AND cur.status = 'processing')
		   AND EXISTS (SELECT 1 FROM u)
	)`

// finishFirstSQL stores a charge's first outcome when it settles the charge with a plain
// approval and needs no other row: the charge was processing with no outcome yet (its event
// is derived from the row), and no card state folded its attempt (a state that did must
// learn it changed: finishSettledSQL). Its row takes what an approval sets, as constants
// where an approval has nothing to say (no failure, decline, class or hold), so that it
// evaluates no branch of finishSet's and binds half its arguments. It changes no row when
// its conditions do not hold, and the caller runs finishSettledSQL. Its arguments are
// firstArgs'; its one row of values is folded into the update by the planner, and
// finishFirstGroupSQL is the same update for many charges.
const finishFirstSQL = finishFirstSetSQL + `(VALUES ($1::text, $2::text, $3::text, $4::bool, $5::text, $6::text, $7::int,
		$8::text, $9::timestamptz, $10::int, $11::bytea, $12::text))
		AS v(id, merchant_id, status, live, ref, account, logged, log, first_sent, answer_status, answer, reason)` +
	finishFirstWhereSQL

// finishFirstSetSQL and finishFirstWhereSQL are a plain approval's update of its charge's
// row, c, from a row of values, v, that finishFirstSQL and finishFirstGroupSQL name between
// them.
const (
	finishFirstSetSQL = `
	UPDATE charges c SET status = v.status, live = v.live, processor_ref = COALESCE(NULLIF(v.ref, ''), c.processor_ref),
		processor_account = COALESCE(NULLIF(v.account, ''), c.processor_account), failure_code = NULL,
		failure_retryable = NULL, decline = NULL, attempts = c.attempts + v.logged,
		-- Appended as text, as finishSet does.
		attempt_log = COALESCE(left(c.attempt_log, -1) || ',' || substr(v.log, 2), v.log, c.attempt_log),
		first_sent_at = COALESCE(c.first_sent_at, v.first_sent), updated_at = clock_timestamp(),
		finalized_at = clock_timestamp(), card_outcome = 'approved', card_class = NULL, card_category = NULL,
		card_mac = NULL, card_cap_reached = false, card_hold = NULL, card_settled_at = clock_timestamp(),
		response_status = v.answer_status, response_body = v.answer,
		outcome_at = clock_timestamp(), outcome_status = v.status, outcome_reason = NULLIF(v.reason, '')
	  FROM `
	finishFirstWhereSQL = `
	 WHERE c.id = v.id AND c.merchant_id = v.merchant_id AND c.status = 'processing' AND c.outcome_at IS NULL
	   AND NOT EXISTS (SELECT 1 FROM card_states s
	        WHERE s.processor_account = COALESCE(NULLIF(v.account, ''), c.processor_account)
	          AND s.fingerprint = c.card_fingerprint
	          AND (s.through_at, s.through_charge) >= (c.card_at, c.id))`
)

// finishSettledSQL stores the outcome of a run that settled its charge and puts no refusal on
// its card (the common case: an approval), in one statement; the card's state learns of an
// attempt it folded that changed (stale).
const finishSettledSQL = finishHeadSQL + `,
	folded AS (
		UPDATE card_states s SET stale = true, version = s.version + 1 FROM cur, u
		 WHERE $14 <> '' AND s.processor_account = u.processor_account AND s.fingerprint = u.card_fingerprint
		   AND (s.through_at, s.through_charge) >= (cur.card_at, $1)
	)
	SELECT EXISTS (SELECT 1 FROM u), EXISTS (SELECT 1 FROM cur)`

// finishSQL stores any outcome in one statement: what finishSettledSQL does, and what
// follows from the rest. An unknown outcome enters reconciliation; a key whose answer is not
// stored is freed; a charge re-recorded at another account or card makes the old card's
// state stale; a refusal puts the card on record (the caller holds the card's lock then).
const finishSQL = finishHeadSQL + `,
	folded AS (
		UPDATE card_states s SET stale = true, version = s.version + 1 FROM cur, u
		 WHERE $14 <> '' AND NOT $28 AND s.processor_account = u.processor_account AND s.fingerprint = u.card_fingerprint
		   AND (s.through_at, s.through_charge) >= (cur.card_at, $1)
	),
	rc AS (
		INSERT INTO reconciliations (charge_id, next_check_at)
		SELECT $1, clock_timestamp() + $25::interval WHERE $3 = 'pending' AND EXISTS (SELECT 1 FROM u)
		ON CONFLICT (charge_id) DO NOTHING
	),
	k AS (
		UPDATE idempotency_keys SET locked_until = NULL
		 WHERE $26 AND merchant_id = $2 AND key = $27 AND EXISTS (SELECT 1 FROM u)
	),
	moved AS (
		UPDATE card_states s SET stale = true, version = s.version + 1 FROM cur, u
		 WHERE $14 <> '' AND (cur.processor_account, cur.card_fingerprint) IS DISTINCT FROM (u.processor_account, u.card_fingerprint)
		   AND s.processor_account = cur.processor_account AND s.fingerprint = cur.card_fingerprint
		   AND (s.through_at, s.through_charge) >= (cur.card_at, $1)
	),
	refusal AS (
		INSERT INTO card_states (processor_account, fingerprint, through_at, through_charge, stale)
		SELECT u.processor_account, u.card_fingerprint, cur.card_at, '', false FROM cur, u
		 WHERE $28 AND u.processor_account IS NOT NULL AND u.card_fingerprint IS NOT NULL AND cur.card_at IS NOT NULL
		ON CONFLICT (processor_account, fingerprint) DO UPDATE SET stale = true, version = card_states.version + 1
		 WHERE (card_states.through_at, card_states.through_charge) >= (EXCLUDED.through_at, $1)
	)
	SELECT EXISTS (SELECT 1 FROM u), EXISTS (SELECT 1 FROM cur)`

// FinishCharge implements charge.Store: one statement (finishFirstSQL, with the plain
// approvals that wait with it, else finishSettledSQL, for the common outcome; finishSQL for
// the rest), or for a refusal the card's lock and the statement in one round trip, and for a
// charge that enters review (p.Review) the statement and its review in one transaction.
func (db *DB) FinishCharge(ctx context.Context, p charge.FinishParams) error {
	v := finishValuesOf(p)
	var updated, found bool
	var err error
	c := p.Charge
	lock := refusal(p) && c.Card != nil && c.ProcessorAccount != ""
	if lock || p.Review != nil {
		var tx *pipelinedTx
		if tx, err = db.pipeline(ctx); err != nil {
			return err
		}
		defer tx.close(ctx)
		b := &pgx.Batch{}
		if lock {
			b.Queue(cardLockSQL, c.ProcessorAccount, c.Card.Fingerprint)
		}
		sql, args := finishStatement(p, v, db.firstCheck)
		b.Queue(sql, args...)
		if r := p.Review; r != nil {
			b.Queue(enterReviewSQL, c.ID, string(c.Status), r.Reason, nullJSON(r.Evidence))
		}
		err = tx.send(ctx, b, true, func(br pgx.BatchResults) error {
			if lock {
				if _, err := br.Exec(); err != nil {
					return err
				}
			}
			if err := br.QueryRow().Scan(&updated, &found); err != nil {
				return err
			}
			if p.Review != nil {
				if _, err := br.Exec(); err != nil {
					return err
				}
			}
			return nil
		})
	} else {
		err = db.statement(ctx, func(q querier) error {
			if firstOutcome(p) {
				applied, err := db.finishFirst(ctx, q, p, v)
				if err != nil || applied {
					updated, found = applied, applied
					return err
				}
			}
			sql, args := finishStatement(p, v, db.firstCheck)
			return q.QueryRow(ctx, sql, args...).Scan(&updated, &found)
		})
	}
	switch {
	case err != nil:
		return fmt.Errorf("store: finish charge: %w", interpretError(err))
	case !found:
		return fmt.Errorf("store: finish charge %s: %w", c.ID, ErrNotFound)
	case !updated:
		return fmt.Errorf("store: finish charge %s: %w", c.ID, charge.ErrSettled)
	}
	return nil
}

// enterReviewSQL puts a charge whose outcome is $2 in the review queue for reason $3, with
// the audit event that says why ($4: the evidence), if the outcome was stored (the charge
// has it now) and the charge is not in review already.
const enterReviewSQL = `
	WITH r AS (
		INSERT INTO reconciliations (charge_id, in_review, review_reason, review_rank, review_since)
		SELECT id, true, $3, 0, clock_timestamp() FROM charges WHERE id = $1 AND status = $2
		ON CONFLICT (charge_id) DO UPDATE SET in_review = true, review_reason = EXCLUDED.review_reason,
			review_since = EXCLUDED.review_since
		 WHERE NOT reconciliations.in_review
		RETURNING charge_id
	)
	INSERT INTO charge_events (charge_id, actor, action, reason, status_before, status_after, evidence)
	SELECT charge_id, 'gateway', 'review', $3, $2, $2, $4 FROM r`

// paymentsSQL reads the charges recorded on a card in a window, but one, newest first.
const paymentsSQL = `
	SELECT id, merchant_id, amount, currency, status, created_at FROM charges
	 WHERE processor_account = $1 AND card_fingerprint = $2 AND card_at >= $3 AND card_at < $4 AND id <> $5
	 ORDER BY card_at DESC
	 LIMIT 100`

// Payments implements charge.Store.
func (db *DB) Payments(ctx context.Context, q charge.PaymentsQuery) ([]charge.Payment, error) {
	return payments(ctx, db.pool, q)
}

// payments runs paymentsSQL for q on db.
func payments(ctx context.Context, db interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}, q charge.PaymentsQuery) ([]charge.Payment, error) {
	rows, err := db.Query(ctx, paymentsSQL, q.Account, q.Fingerprint, q.From, q.To, q.Except)
	if err != nil {
		return nil, fmt.Errorf("store: payments on a card: %w", interpretError(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (charge.Payment, error) {
		var p charge.Payment
		var status string
		err := r.Scan(&p.ChargeID, &p.MerchantID, &p.Amount, &p.Currency, &status, &p.CreatedAt)
		p.Status = charge.Status(status)
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: payments on a card: %w", interpretError(err))
	}
	return out, nil
}

// refusal reports whether p's outcome puts a refusal on the card's record.
func refusal(p charge.FinishParams) bool { return p.Card != nil && p.Card.Outcome.Refusal() }

// finishStatement returns the statement that stores p and its arguments: finishSettledSQL
// when p settles its charge with nothing but its row to write (no reconciliation to begin,
// no key to free, no other card, no refusal), finishSQL otherwise.
func finishStatement(p charge.FinishParams, v finishValues, firstCheck time.Duration) (string, []any) {
	args := finishArgs(p, v)
	if p.Charge.Status != charge.StatusPending && !p.ReleaseKey && !p.Moved && !refusal(p) {
		return finishSettledSQL, args
	}
	return finishSQL, append(args, firstCheck, p.ReleaseKey, p.Key, refusal(p))
}

// finishValues are the values a run's outcome writes, as the finish statements take them.
type finishValues struct {
	failCode       *string
	failRetry      *bool
	decline        []byte
	status         *int
	body           []byte
	cardOutcome    string
	card           charge.CardOutcome
	nextID         *string
	nextAt         *time.Time
	movedFP        *string
	firstSent      *time.Time
	attempts       []byte
	attemptsLogged int
}

// finishValuesOf returns what p's outcome writes, computed once for whichever statement
// stores it.
func finishValuesOf(p charge.FinishParams) finishValues {
	c := p.Charge
	var v finishValues
	if c.Failure != nil {
		v.failCode, v.failRetry = &c.Failure.Code, &c.Failure.Retryable
	}
	if len(c.Decline) > 0 {
		v.decline = c.Decline
	}
	if p.ResponseStatus != 0 {
		v.status, v.body = &p.ResponseStatus, encodeAnswer(p.ResponseBody, c)
	}
	// The card's history follows the outcome: a charge that failed never reached the card
	// network, so its attempt is dropped (charge.NoCardAttempt, "none"), as is that of a
	// charge waiting for the cardholder's authentication when the engine says so.
	switch {
	case p.Card != nil:
		v.card, v.cardOutcome = *p.Card, string(p.Card.Outcome)
	case c.Status == charge.StatusFailed:
		v.cardOutcome = string(charge.NoCardAttempt)
	}
	if p.Next != nil {
		v.nextID, v.nextAt = &p.Next.ChargeID, &p.Next.At
	}
	if p.Moved && c.Card != nil && c.Card.Fingerprint != "" {
		v.movedFP = &c.Card.Fingerprint
	}
	if len(p.Attempts) > 0 {
		t := p.Attempts[0].StartedAt
		v.firstSent = &t
	}
	v.attempts, v.attemptsLogged = encodeAttempts(p.Attempts, c.CreatedAt), len(p.Attempts)
	return v
}

// finishArgs are the arguments finishSettledSQL and finishSQL share for p ($1 to $24).
func finishArgs(p charge.FinishParams, v finishValues) []any {
	c := p.Charge
	args := make([]any, 0, 28)
	return append(args, c.ID, c.MerchantID, string(c.Status), c.ProcessorRef, c.ProcessorAccount, v.failCode, v.failRetry,
		v.decline, v.attemptsLogged, v.attempts, v.firstSent, v.nextID, v.nextAt,
		v.cardOutcome, string(v.card.Class), int(v.card.Category), int(v.card.MAC), v.card.CapReached, v.movedFP,
		v.status, v.body, p.Reason, string(v.card.Hold), c.Status.Live())
}

// firstOutcome reports whether finishFirstSQL may store p: an outcome that settles its
// charge with a plain approval (no failure, decline or next reattempt, and an approved
// attempt with nothing else to record), and nothing but the charge's row to write.
func firstOutcome(p charge.FinishParams) bool {
	c := p.Charge
	return c.Status.Final() && !p.ReleaseKey && !p.Moved && c.Failure == nil && len(c.Decline) == 0 && p.Next == nil &&
		p.Card != nil && *p.Card == charge.CardOutcome{Outcome: decline.Approved}
}

// firstArgs are finishFirstSQL's arguments for p.
func firstArgs(p charge.FinishParams, v finishValues) []any {
	c := p.Charge
	return []any{c.ID, c.MerchantID, string(c.Status), c.Status.Live(), c.ProcessorRef, c.ProcessorAccount,
		v.attemptsLogged, v.attempts, v.firstSent, v.status, v.body, p.Reason}
}

// Charge implements charge.Store.
func (db *DB) Charge(ctx context.Context, merchantID, id string) (*charge.Charge, error) {
	var log []byte
	c, err := scanCharge(rowWithTail{db.pool.QueryRow(ctx, `SELECT `+chargeColumns+`, c.attempt_log FROM charges c
		WHERE c.id = $1 AND c.merchant_id = $2`, id, merchantID), []any{&log}})
	if errors.Is(err, ErrNotFound) {
		return nil, charge.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	if c.AttemptsDetail, err = decodeAttempts(log, c.CreatedAt); err != nil {
		return nil, err
	}
	return c, nil
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

func chargeByID(ctx context.Context, q querier, merchantID, id string) (*charge.Charge, error) {
	return scanCharge(q.QueryRow(ctx, `SELECT `+chargeColumns+` FROM charges c WHERE c.id = $1 AND c.merchant_id = $2`,
		id, merchantID))
}

// Charges implements charge.Store: newest first, by (created_at, id) so that the cursor is
// stable even for charges created in the same microsecond.
func (db *DB) Charges(ctx context.Context, p charge.ListParams) ([]charge.Charge, bool, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT `+chargeColumns+` FROM charges c
		 WHERE c.merchant_id = $1
		   AND ($2 = '' OR c.status = $2)
		   AND ($3 = '' OR (c.created_at, c.id) < (SELECT s.created_at, s.id FROM charges s
		                                           WHERE s.id = $3 AND s.merchant_id = $1))
		 ORDER BY c.created_at DESC, c.id DESC
		 LIMIT $4`, p.MerchantID, string(p.Status), p.StartingAfter, p.Limit+1)
	if err != nil {
		return nil, false, fmt.Errorf("store: list charges: %w", err)
	}
	defer rows.Close()
	var out []charge.Charge
	for rows.Next() {
		c, err := scanCharge(rows)
		if err != nil {
			return nil, false, err
		}
		out = append(out, *c)
	}
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("store: list charges: %w", err)
	}
	more := len(out) > p.Limit
	if more {
		out = out[:p.Limit]
	}
	return out, more, nil
}

// actorOr returns a, or "gateway" for none.
func actorOr(a string) string {
	if a == "" {
		return "gateway"
	}
	return a
}
