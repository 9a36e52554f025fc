package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/idempotency"
)

var _ charge.Store = (*DB)(nil)

const chargeColumns = `c.id, c.merchant_id, c.amount, c.currency, c.payment_method, COALESCE(c.customer, ''),
	COALESCE(c.reference, ''), c.initiator, c.reattempt_mode, COALESCE(c.reattempt_of, ''), c.metadata, c.status,
	c.processor_key, COALESCE(c.processor_account, ''), COALESCE(c.processor_ref, ''), c.failure_code,
	c.failure_retryable, c.decline, c.attempts, c.first_sent_at, c.created_at, c.updated_at,
	COALESCE((SELECT k.key FROM idempotency_keys k WHERE k.charge_id = c.id ORDER BY k.created_at LIMIT 1), ''),
	COALESCE(c.chain, c.id), c.card_fingerprint, COALESCE(c.card_network, ''), COALESCE(c.card_exp_month, 0),
	COALESCE(c.card_exp_year, 0), c.next_reattempt_at, COALESCE(c.reference_duplicate_of, ''),
	COALESCE(c.reattempt_duplicate_of, '')`

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
		&c.ProcessorKey, &c.ProcessorAccount, &c.ProcessorRef, &failCode,
		&failRetry, &decline, &c.Attempts, &c.FirstSentAt, &c.CreatedAt, &c.UpdatedAt,
		&c.IdempotencyKey, &c.Chain, &fpr, &card.Network, &card.ExpMonth, &card.ExpYear, &c.NextReattemptAt,
		&c.ReferenceDuplicateOf, &c.ReattemptDuplicateOf)
	if err != nil {
		return nil, interpretError(err)
	}
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

// BeginCharge implements charge.Store, in one transaction.
func (db *DB) BeginCharge(ctx context.Context, p charge.BeginParams) (charge.Begun, error) {
	return db.begin(ctx, p)
}

// statement runs one atomic statement: on its own in production; inside a savepoint when
// the store runs in a test transaction, so that its failure leaves the transaction usable.
func (db *DB) statement(ctx context.Context, fn func(q querier) error) error {
	if db.raw != nil {
		return fn(db.pool)
	}
	return pgx.BeginFunc(ctx, db.pool, func(tx pgx.Tx) error { return fn(tx) })
}

// bindKeySQL binds a new key to its request (naming the charge about to be created) and,
// when the request names a card, takes the card's lock (see admit; the same lock as
// cardLockSQL). It returns the database clock and whether the key is new.
const bindKeySQL = `
	WITH now AS (SELECT clock_timestamp() AS t),
	k AS (
		INSERT INTO idempotency_keys (merchant_id, key, fingerprint, charge_id, recovery_point, locked_until,
			created_at, last_used_at)
		SELECT $1, $2, $3, $8, $4, now.t + $5::interval, now.t, now.t FROM now
		ON CONFLICT DO NOTHING
		RETURNING 1
	),
	l AS (
		SELECT pg_advisory_xact_lock(hashtextextended($6 || '/' || $7, 7263)) WHERE $7 <> ''
	)
	SELECT now.t, EXISTS (SELECT 1 FROM k), (SELECT count(*) FROM l) FROM now`

// newKeyBegun is what a first phase reports for a key it wrote at now, naming the charge it
// creates.
func newKeyBegun(p charge.BeginParams, now time.Time) charge.Begun {
	lockUntil := now.Add(p.LockFor)
	return charge.Begun{Now: now, Verdict: idempotency.Proceed, Record: idempotency.Record{MerchantID: p.MerchantID,
		Key: p.Key, Fingerprint: p.Fingerprint, RecoveryPoint: idempotency.PointCreated, LockedUntil: &lockUntil}}
}

// lockedCard returns the processor account and the card's fingerprint whose lock bindKeySQL
// takes: both empty when the request names no card.
func lockedCard(p charge.BeginParams) (account, fingerprint string) {
	if p.Card == nil {
		return "", ""
	}
	return p.New.ProcessorAccount, p.Card.Fingerprint
}

func (db *DB) begin(ctx context.Context, p charge.BeginParams) (charge.Begun, error) {
	out, err := db.beginOnce(ctx, p)
	var conflict *ConflictError
	if errors.As(err, &conflict) && conflict.Constraint == "charges_live_reattempt" {
		// Another reattempt of the chain is live: nothing was written.
		id, err := liveReattempt(ctx, db.pool, p.New.Chain, p.New.ID)
		return charge.Begun{LiveReattempt: id}, err
	}
	return out, err
}

// liveReattemptSQL finds the live reattempt of chain $1 other than the charge $2: the one the
// one-live-reattempt rule holds (migration 0013), before one recorded as its duplicate.
const liveReattemptSQL = `SELECT id FROM charges WHERE chain = $1 AND reattempt_of IS NOT NULL AND id <> $2
	AND status IN ('processing', 'pending', 'succeeded') ORDER BY reattempt_duplicate_of IS NOT NULL LIMIT 1`

// liveReattempt returns the live reattempt of chain other than the charge except.
func liveReattempt(ctx context.Context, q querier, chain, except string) (string, error) {
	var id string
	err := q.QueryRow(ctx, liveReattemptSQL, chain, except).Scan(&id)
	if err != nil {
		return "", fmt.Errorf("store: live reattempt: %w", interpretError(err))
	}
	return id, nil
}

func (db *DB) beginOnce(ctx context.Context, p charge.BeginParams) (charge.Begun, error) {
	out, ok, err := db.beginClean(ctx, p)
	if ok || (err != nil && !retryableTxError(err)) {
		return out, interpretError(err)
	}
	for run := 0; ; run++ {
		out, ok, err := db.beginNew(ctx, p)
		if ok || (err != nil && (!retryableTxError(err) || run+1 >= maxTxRuns || ctx.Err() != nil)) {
			return out, interpretError(err)
		}
		if err == nil {
			break // the key exists: a retry of the request
		}
	}
	return db.beginExisting(ctx, p)
}

// beginClean is the first phase of a request whose key is new, for a card whose history
// holds nothing but approvals (the common case), in one round trip: the card's lock, then
// one statement that checks both conditions and only then writes the key with the charge,
// then COMMIT. Approvals alone change no verdict of the network rules, so the verdict is the
// one on an empty history, and it is what the statement records. It reports false, having
// changed nothing, when either condition does not hold (or the charge's reference is live
// on another charge): the long way then decides.
func (db *DB) beginClean(ctx context.Context, p charge.BeginParams) (out charge.Begun, ok bool, err error) {
	if p.Card == nil || p.Card.Fingerprint == "" || p.Admit == nil || p.New.ReattemptOf != "" ||
		(p.New.Chain != "" && p.New.Chain != p.New.ID) {
		return out, false, nil
	}
	// The verdict on an empty history depends on no clock; the rows get the database's.
	plan, err := planCreation(p, time.Now(), nil, creationClean, &out)
	if err != nil || plan.refused != nil {
		return charge.Begun{}, false, err
	}
	tx, err := db.pipeline(ctx)
	if err != nil {
		return out, false, err
	}
	defer tx.close(ctx)
	b := &pgx.Batch{}
	b.Queue(cardLockSQL, p.New.ProcessorAccount, p.Card.Fingerprint)
	queue(b, plan.stmts)
	err = tx.send(ctx, b, true, func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("store: lock card: %w", err)
		}
		return readStmts(br, plan.stmts)
	})
	var conflict *ConflictError
	if errors.As(err, &conflict) && conflict.Constraint == "idempotency_keys_pkey" {
		return charge.Begun{}, false, nil // a request with the same key raced this one
	}
	if err != nil || !plan.res.created {
		return charge.Begun{}, false, err
	}
	now := plan.res.now
	out = newKeyBegun(p, now)
	plan.created.CreatedAt, plan.created.UpdatedAt = now, now
	plan.apply(&out)
	return out, true, nil
}

// beginNew is the first phase of a request whose key is new, in two round trips: the
// transaction's BEGIN travels with the key's insert, the card's lock and the card's
// history; the charge (or the refusal) travels with the COMMIT. It reports false, having
// changed nothing, when the key exists.
func (db *DB) beginNew(ctx context.Context, p charge.BeginParams) (out charge.Begun, ok bool, err error) {
	tx, err := db.pipeline(ctx)
	if err != nil {
		return out, false, err
	}
	defer tx.close(ctx)
	var (
		now      time.Time
		inserted bool
		hist     decline.History
	)
	account, cardFP := lockedCard(p)
	withHistory := p.Admit != nil && p.Card != nil
	// A reattempt looks for a live reattempt of its chain first: the order may be paid,
	// whatever the card rules would say (the unique index charges_live_reattempt decides a
	// race).
	withLive := p.New.ReattemptOf != ""
	var live string
	b := &pgx.Batch{}
	b.Queue(bindKeySQL, p.MerchantID, p.Key, p.Fingerprint[:], idempotency.PointCreated, p.LockFor, account, cardFP, p.New.ID)
	if withHistory {
		b.Queue(cardHistorySQL, account, cardFP, maxCardHistory)
	}
	if withLive {
		b.Queue(liveReattemptSQL, p.New.Chain, p.New.ID)
	}
	err = tx.send(ctx, b, false, func(br pgx.BatchResults) error {
		if err := br.QueryRow().Scan(&now, &inserted, new(int)); err != nil {
			return fmt.Errorf("store: bind key: %w", interpretError(err))
		}
		if withHistory {
			rows, err := br.Query()
			if err != nil {
				return fmt.Errorf("store: card history: %w", err)
			}
			if hist, err = collectHistory(rows); err != nil {
				return err
			}
		}
		if withLive {
			if err := br.QueryRow().Scan(&live); err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("store: live reattempt: %w", err)
			}
		}
		return nil
	})
	if err != nil || !inserted {
		return out, false, err
	}
	if live != "" {
		// Nothing is committed: the key stays free, as the charge is never created.
		return charge.Begun{Now: now, LiveReattempt: live}, true, nil
	}
	out = newKeyBegun(p, now)
	plan, err := planCreation(p, now, hist, creationNewKey, &out)
	if err != nil {
		return out, false, err
	}
	b = &pgx.Batch{}
	queue(b, plan.stmts)
	if err := tx.send(ctx, b, true, func(br pgx.BatchResults) error { return readStmts(br, plan.stmts) }); err != nil {
		return charge.Begun{}, false, err
	}
	if plan.created != nil && !plan.res.created && plan.res.duplicateOf == "" {
		// The live charge committed after the statement's snapshot was taken.
		if plan.res.duplicateOf, err = liveReference(ctx, db.pool, p.MerchantID, p.New.Reference); err != nil {
			return charge.Begun{}, false, err
		}
	}
	plan.apply(&out)
	return out, true, nil
}

// beginExisting is the first phase of a request whose key was seen before, in one
// transaction.
func (db *DB) beginExisting(ctx context.Context, p charge.BeginParams) (charge.Begun, error) {
	var out charge.Begun
	err := db.InTx(ctx, func(tx pgx.Tx) error {
		out = charge.Begun{}
		// The key may have been reaped since the first look: binding it again writes it anew.
		var (
			now      time.Time
			inserted bool
		)
		account, cardFP := lockedCard(p)
		err := tx.QueryRow(ctx, bindKeySQL,
			p.MerchantID, p.Key, p.Fingerprint[:], idempotency.PointCreated, p.LockFor, account, cardFP, p.New.ID,
		).Scan(&now, &inserted, new(int))
		if err != nil {
			return fmt.Errorf("store: bind key: %w", err)
		}
		if inserted {
			// The new key names the charge created below; a refusal releases it.
			out = newKeyBegun(p, now)
			return createCharge(ctx, tx, p, now, &out, true)
		}
		out.Now = now
		lockUntil := now.Add(p.LockFor)
		rec, err := lockKey(ctx, tx, p.MerchantID, p.Key)
		if err != nil {
			return err
		}
		out.Record = rec
		out.Verdict = idempotency.Decide(rec, p.Fingerprint, now)
		if out.Verdict != idempotency.Proceed {
			if rec.ChargeID != "" && out.Verdict != idempotency.Mismatch {
				out.Charge, err = chargeByID(ctx, tx, p.MerchantID, rec.ChargeID)
			}
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE idempotency_keys SET locked_until = $3, last_used_at = $4
			WHERE merchant_id = $1 AND key = $2`, p.MerchantID, p.Key, lockUntil, now); err != nil {
			return fmt.Errorf("store: lock key: %w", err)
		}
		if rec.ChargeID != "" {
			out.Charge, err = chargeByID(ctx, tx, p.MerchantID, rec.ChargeID)
			if err != nil {
				return err
			}
			out.PriorStatus = out.Charge.Status
			if out.Charge.Status == charge.StatusProcessing {
				// A run resumed: its decline is judged on the card's history, as its first
				// run's would have been.
				if out.History, err = resumedHistory(ctx, tx, out.Charge); err != nil {
					return err
				}
			}
			if c := out.Charge; c.Status == charge.StatusFailed && c.Failure != nil && c.Failure.Retryable {
				// The same operation runs again, so the network rules decide again; from here
				// until its outcome is stored it may reach the processor, so a crash must leave
				// it processing.
				if p.Card == nil {
					// The card cannot be read now, and the network rules decide on the card
					// as the processor has it: the charge stays failed, retryably.
					return nil
				}
				if now.Sub(c.CreatedAt) >= charge.KeyWriteWindow ||
					(c.ProcessorAccount != "" && c.ProcessorAccount != p.New.ProcessorAccount) {
					// Nothing may be written under the processor key any more, or not at
					// the account configured now: the charge stays failed (the engine makes
					// it final), and no rule admits an attempt that cannot happen.
					return nil
				}
				if c.Card == nil {
					c.Card = p.Card
					if _, err := tx.Exec(ctx, `UPDATE charges SET card_fingerprint = $2, card_network = $3,
						card_exp_month = $4, card_exp_year = $5 WHERE id = $1`,
						c.ID, c.Card.Fingerprint, c.Card.Network, c.Card.ExpMonth, c.Card.ExpYear); err != nil {
						return fmt.Errorf("store: record card: %w", err)
					}
				}
				// Refused, or its reference taken by a live charge meanwhile: the charge stays
				// failed, and the key is free for a retry (no request runs under it).
				unlock := func() error {
					_, err := tx.Exec(ctx, `UPDATE idempotency_keys SET locked_until = NULL
						WHERE merchant_id = $1 AND key = $2`, p.MerchantID, p.Key)
					return err
				}
				var verdict *decline.Verdict
				if p.Admit != nil {
					v, err := admit(ctx, tx, p.Admit, c, now, &out)
					if err != nil {
						return err
					}
					if !v.Allowed {
						if err := recordDecision(ctx, tx, c, v, now); err != nil {
							return err
						}
						out.Refused = &v
						return unlock()
					}
					verdict = &v
				}
				dup, err := reopenCharge(ctx, tx, c)
				if err != nil {
					return err
				}
				if dup != "" {
					// No attempt follows: the allowed decision is not recorded.
					out.DuplicateOf = dup
					return unlock()
				}
				if verdict != nil {
					if err := recordDecision(ctx, tx, c, *verdict, now); err != nil {
						return err
					}
				}
				if err := insertCardAttempt(ctx, tx, c, now); err != nil {
					return err
				}
			}
			return nil
		}
		return createCharge(ctx, tx, p, now, &out, true)
	})
	return out, err
}

// resumedHistory returns the card's history for a charge left processing and now resumed,
// without the charge's own attempt (its decline is added to it): nil for a charge without a
// card.
func resumedHistory(ctx context.Context, q rowsQuerier, c *charge.Charge) (decline.History, error) {
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

func lockKey(ctx context.Context, tx pgx.Tx, merchantID, key string) (idempotency.Record, error) {
	rec := idempotency.Record{MerchantID: merchantID, Key: key}
	var (
		fp       []byte
		chargeID *string
		status   *int
	)
	err := tx.QueryRow(ctx, `
		SELECT fingerprint, charge_id, recovery_point, locked_until, response_status, response_body
		  FROM idempotency_keys WHERE merchant_id = $1 AND key = $2 FOR UPDATE`, merchantID, key,
	).Scan(&fp, &chargeID, &rec.RecoveryPoint, &rec.LockedUntil, &status, &rec.ResponseBody)
	if err != nil {
		return rec, fmt.Errorf("store: read key: %w", interpretError(err))
	}
	copy(rec.Fingerprint[:], fp)
	if chargeID != nil {
		rec.ChargeID = *chargeID
	}
	if status != nil {
		rec.ResponseStatus = *status
	}
	return rec, nil
}

// reopenCharge puts a retryably failed charge back to processing. When a live charge took
// its reference meanwhile, it changes nothing and returns that charge's id.
func reopenCharge(ctx context.Context, tx pgx.Tx, c *charge.Charge) (string, error) {
	if _, err := tx.Exec(ctx, `SAVEPOINT reopen_charge`); err != nil {
		return "", err
	}
	_, err := tx.Exec(ctx, `UPDATE charges SET status = 'processing', failure_code = NULL, failure_retryable = NULL,
		updated_at = now(), finalized_at = NULL WHERE id = $1`, c.ID)
	var conflict *ConflictError
	if err := interpretError(err); errors.As(err, &conflict) && conflict.Constraint == "charges_live_reference" {
		if _, err := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT reopen_charge`); err != nil {
			return "", err
		}
		var id string
		err := tx.QueryRow(ctx, `SELECT id FROM charges WHERE merchant_id = $1 AND reference = $2 AND id <> $3
			AND status IN ('processing', 'pending', 'succeeded') LIMIT 1`, c.MerchantID, c.Reference, c.ID).Scan(&id)
		return id, interpretError(err)
	} else if err != nil {
		return "", fmt.Errorf("store: reopen charge: %w", err)
	}
	c.Status, c.Failure = charge.StatusProcessing, nil
	_, err = tx.Exec(ctx, `RELEASE SAVEPOINT reopen_charge`)
	return "", err
}

// FinishCharge implements charge.Store in one statement (one round trip, one commit): the
// attempts, the charge's outcome and the key's stored answer together.
func (db *DB) FinishCharge(ctx context.Context, p charge.FinishParams) error {
	sql, args, err := finishStatement(p, db.firstCheck)
	if err != nil {
		return err
	}
	var updated, found bool
	err = db.statement(ctx, func(q querier) error {
		return q.QueryRow(ctx, sql, args...).Scan(&updated, &found)
	})
	switch {
	case err != nil:
		return fmt.Errorf("store: finish charge: %w", interpretError(err))
	case !found:
		return fmt.Errorf("store: finish charge %s: %w", p.Charge.ID, ErrNotFound)
	case !updated:
		return fmt.Errorf("store: finish charge %s: %w", p.Charge.ID, charge.ErrSettled)
	}
	return nil
}

// finishStatement is FinishCharge's statement and its arguments.
func finishStatement(p charge.FinishParams, firstCheck time.Duration) (string, []any, error) {
	c := p.Charge
	var failCode *string
	var failRetry *bool
	if c.Failure != nil {
		failCode, failRetry = &c.Failure.Code, &c.Failure.Retryable
	}
	var decline []byte
	if len(c.Decline) > 0 {
		decline = c.Decline
	}
	var status *int
	var body []byte
	if p.ResponseStatus != 0 {
		status, body = &p.ResponseStatus, p.ResponseBody
	}
	n := len(p.Attempts)
	var (
		started                                = make([]time.Time, n)
		duration, timeout, retryAfter, backoff = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		class, code, requestID                 = make([]string, n), make([]string, n), make([]string, n)
		httpStatus                             = make([]int32, n)
		tokensBefore, tokensAfter              = make([]float64, n), make([]float64, n)
	)
	for i, a := range p.Attempts {
		started[i], duration[i], timeout[i], class[i] = a.StartedAt, a.DurationMS, a.TimeoutMS, a.Class
		httpStatus[i], code[i], requestID[i] = int32(a.HTTPStatus), a.ProcessorCode, a.RequestID
		retryAfter[i], backoff[i], tokensBefore[i], tokensAfter[i] = a.RetryAfterMS, a.BackoffMS, a.BudgetTokensBefore, a.BudgetTokensAfter
	}
	// The card's history follows the outcome: a charge that failed never reached the card
	// network, so its reservation is dropped (charge.NoCardAttempt, "none"), as is that of a
	// charge waiting for the cardholder's authentication when the engine says so.
	var (
		cardOutcome string
		co          charge.CardOutcome
	)
	switch {
	case p.Card != nil:
		co, cardOutcome = *p.Card, string(p.Card.Outcome)
	case c.Status == charge.StatusFailed:
		cardOutcome = string(charge.NoCardAttempt)
	}
	var (
		nextID *string
		nextAt *time.Time
	)
	if p.Next != nil {
		nextID, nextAt = &p.Next.ChargeID, &p.Next.At
	}
	args := pgx.NamedArgs{
		"id": c.ID, "merchant": c.MerchantID, "status": string(c.Status), "ref": c.ProcessorRef,
		"account": c.ProcessorAccount, "fail_code": failCode, "fail_retry": failRetry, "decline": decline,
		"n": n, "first_sent": firstStart(p.Attempts),
		"started": started, "duration": duration, "timeout": timeout, "class": class, "http_status": httpStatus,
		"code": code, "request_id": requestID, "retry_after": retryAfter, "backoff": backoff,
		"tokens_before": tokensBefore, "tokens_after": tokensAfter,
		"resp_status": status, "resp_body": body, "point": idempotency.PointFinished, "key": p.Key,
		"card_outcome": cardOutcome, "card_class": string(co.Class), "card_category": int(co.Category),
		"card_mac": int(co.MAC), "cap_reached": co.CapReached,
		"actor": actorOr(p.Actor), "reason": p.Reason, "first_check": firstCheck,
		"next_id": nextID, "next_at": nextAt,
	}
	v := finishVariant{pending: c.Status == charge.StatusPending, attempts: n > 0, card: cardOutcome,
		moved: p.Moved && c.Card != nil && c.Card.Fingerprint != ""}
	if v.moved {
		args["card_fp"] = c.Card.Fingerprint
	}
	if v.card != "" && v.card != string(charge.NoCardAttempt) {
		v.card = "update"
	}
	return positional(assemble(v, finishSQL), args)
}

// finishVariant names the parts of finishSQL an outcome needs: card is "" (the card's history
// is unchanged), "none" (its attempt is dropped) or "update"; moved re-records the charge's
// card under the processor account its request reached (FinishParams.Moved).
type finishVariant struct {
	pending, attempts, moved bool
	card                     string
}

// finishSQL is the statement that stores an outcome, with only the parts it needs: an
// unknown outcome enters reconciliation, attempts are appended when there are some, and the
// card's history follows the outcome ("none" drops the card attempt of a charge that never
// reached the card network). Each variant is one prepared statement.
// finishGuard keeps a run's outcome from replacing one settled without it. A run whose key's
// lock expired while it stalled may finish after the completer, a retry, reconciliation or an
// operator settled its charge: the charge then keeps its outcome. A charge takes any outcome
// while processing, the status it already has, and while pending only an approval or a
// decline: never failed once pending (uncertainty is sticky).
const finishGuard = `
			   AND (status = 'processing' OR status = @status
			        OR (status = 'pending' AND @status IN ('succeeded', 'declined')))`

func finishSQL(v finishVariant) string {
	// Everything the statement writes follows the charge's own update (u), which only takes
	// an outcome the charge may still take (see finishGuard).
	ctes := []string{`cur AS (
			SELECT attempts, status FROM charges WHERE id = @id AND merchant_id = @merchant
		)`, `u AS (
			UPDATE charges SET status = @status, processor_ref = COALESCE(NULLIF(@ref, ''), processor_ref),
				processor_account = COALESCE(NULLIF(@account, ''), processor_account), failure_code = @fail_code,
				failure_retryable = @fail_retry, decline = @decline, attempts = attempts + @n,
				first_sent_at = CASE WHEN @n > 0 THEN COALESCE(first_sent_at, @first_sent) ELSE first_sent_at END,
				updated_at = clock_timestamp(),
				finalized_at = CASE WHEN @status IN ('succeeded', 'declined', 'failed') THEN clock_timestamp() END,
				next_reattempt_id = COALESCE(@next_id, next_reattempt_id),
				next_reattempt_at = COALESCE(@next_at, next_reattempt_at)` + movedCharge(v) + `
			 WHERE id = @id AND merchant_id = @merchant` + finishGuard + `
			RETURNING 1
		)`, `ev AS (
			INSERT INTO charge_events (charge_id, actor, action, reason, status_before, status_after)
			SELECT @id, @actor, 'outcome', NULLIF(@reason, ''), cur.status, @status FROM cur
			 WHERE cur.status IS DISTINCT FROM @status AND EXISTS (SELECT 1 FROM u)
		)`}
	if v.pending {
		ctes = append(ctes, `rc AS (
			-- An unknown outcome enters reconciliation: its first check is due shortly.
			INSERT INTO reconciliations (charge_id, next_check_at)
			SELECT @id, clock_timestamp() + @first_check::interval WHERE EXISTS (SELECT 1 FROM u)
			ON CONFLICT (charge_id) DO NOTHING
		)`)
	}
	if v.attempts {
		ctes = append(ctes, `a AS (
			INSERT INTO charge_attempts (charge_id, n, started_at, duration_ms, timeout_ms, class, http_status,
				processor_code, request_id, retry_after_ms, backoff_ms, budget_tokens_before, budget_tokens_after)
			SELECT @id, cur.attempts + t.ord, t.started_at, t.duration_ms, t.timeout_ms, t.class, NULLIF(t.http_status, 0),
				NULLIF(t.code, ''), NULLIF(t.request_id, ''), t.retry_after_ms, t.backoff_ms, t.tokens_before, t.tokens_after
			  FROM cur, unnest(@started::timestamptz[], @duration::bigint[], @timeout::bigint[], @class::text[],
				@http_status::int[], @code::text[], @request_id::text[], @retry_after::bigint[], @backoff::bigint[],
				@tokens_before::float8[], @tokens_after::float8[])
				WITH ORDINALITY AS t(started_at, duration_ms, timeout_ms, class, http_status, code, request_id,
				                     retry_after_ms, backoff_ms, tokens_before, tokens_after, ord)
			 WHERE EXISTS (SELECT 1 FROM u)
		)`)
	}
	switch v.card {
	case "":
	case "none":
		ctes = append(ctes, `cd AS (
			DELETE FROM card_attempts WHERE charge_id = @id AND EXISTS (SELECT 1 FROM u)
		)`)
	default:
		ctes = append(ctes, `ca AS (
			UPDATE card_attempts SET outcome = @card_outcome, class = NULLIF(@card_class, ''),
				category = NULLIF(@card_category::int, 0), mac = NULLIF(@card_mac::int, 0), cap_reached = @cap_reached,
				settled_at = CASE WHEN @card_outcome <> 'pending' THEN clock_timestamp() END`+movedCard(v)+`
			 WHERE charge_id = @id AND EXISTS (SELECT 1 FROM u)
		)`)
	}
	ctes = append(ctes, `k AS (
			UPDATE idempotency_keys SET response_status = @resp_status, response_body = @resp_body,
				recovery_point = @point, locked_until = NULL, last_used_at = clock_timestamp()
			 WHERE merchant_id = @merchant AND key = @key AND EXISTS (SELECT 1 FROM u)
		)`)
	return "\n\t\tWITH " + strings.Join(ctes, ",\n\t\t") + `
		SELECT EXISTS (SELECT 1 FROM u), EXISTS (SELECT 1 FROM cur)`
}

// movedCharge and movedCard are the assignments of a charge re-recorded at the processor
// account its request reached, with its card's fingerprint there.
func movedCharge(v finishVariant) string {
	if !v.moved {
		return ""
	}
	return `,
				card_fingerprint = @card_fp`
}

func movedCard(v finishVariant) string {
	if !v.moved {
		return ""
	}
	return `,
				processor_account = @account, fingerprint = @card_fp`
}

func actorOr(a string) string {
	if a == "" {
		return "gateway"
	}
	return a
}

func firstStart(as []charge.Attempt) *time.Time {
	if len(as) == 0 {
		return nil
	}
	t := as[0].StartedAt
	return &t
}

// Charge implements charge.Store.
func (db *DB) Charge(ctx context.Context, merchantID, id string) (*charge.Charge, error) {
	c, err := chargeByID(ctx, db.pool, merchantID, id)
	if errors.Is(err, ErrNotFound) {
		return nil, charge.ErrNotFound
	}
	if err != nil {
		return nil, err
	}
	rows, err := db.pool.Query(ctx, `
		SELECT n, started_at, duration_ms, timeout_ms, class, COALESCE(http_status, 0),
			COALESCE(processor_code, ''), COALESCE(request_id, ''), COALESCE(retry_after_ms, 0),
			COALESCE(backoff_ms, 0), COALESCE(budget_tokens_before, 0), COALESCE(budget_tokens_after, 0)
		  FROM charge_attempts WHERE charge_id = $1 ORDER BY n`, id)
	if err != nil {
		return nil, fmt.Errorf("store: attempts: %w", err)
	}
	c.AttemptsDetail, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (charge.Attempt, error) {
		var a charge.Attempt
		err := r.Scan(&a.N, &a.StartedAt, &a.DurationMS, &a.TimeoutMS, &a.Class, &a.HTTPStatus,
			&a.ProcessorCode, &a.RequestID, &a.RetryAfterMS, &a.BackoffMS, &a.BudgetTokensBefore, &a.BudgetTokensAfter)
		return a, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: attempts: %w", err)
	}
	return c, nil
}

type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
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
