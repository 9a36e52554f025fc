package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/idempotency"
)

// cardLock serialises the decisions on one card at one processor account: two charges
// racing for the last slot of a network cap are decided one after the other, each seeing
// the other's attempt.
func cardLock(ctx context.Context, tx pgx.Tx, account, fingerprint string) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended($1 || '/' || $2, 7263))`, account, fingerprint)
	if err != nil {
		return fmt.Errorf("store: lock card: %w", err)
	}
	return nil
}

// maxCardHistory bounds the attempts read for one card's decision.
const maxCardHistory = 1000

// cardHistory reads the card's attempts at the processor account, newest first.
func cardHistory(ctx context.Context, q rowsQuerier, account, fingerprint string) (decline.History, error) {
	rows, err := q.Query(ctx, `
		SELECT charge_id, chain, at, outcome, COALESCE(class, ''), network, COALESCE(mac, 0),
			COALESCE(exp_month, 0), COALESCE(exp_year, 0), cap_reached
		  FROM card_attempts WHERE processor_account = $1 AND fingerprint = $2
		 ORDER BY at DESC LIMIT $3`, account, fingerprint, maxCardHistory)
	if err != nil {
		return nil, fmt.Errorf("store: card history: %w", err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (decline.Attempt, error) {
		var (
			a                    decline.Attempt
			outcome, class, netw string
			mac, month, year     int
		)
		err := r.Scan(&a.Charge, &a.Chain, &a.At, &outcome, &class, &netw, &mac, &month, &year, &a.CapReached)
		a.Outcome, a.Class, a.Network = decline.Outcome(outcome), decline.Class(class), decline.ParseNetwork(netw)
		a.MAC = decline.MAC(mac)
		a.Expiry = decline.Expiry{Year: year, Month: month}
		return a, err
	})
}

// rowsQuerier runs a query returning rows: a transaction or a pool.
type rowsQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// admit decides under the card's lock whether c may be attempted now, and records the
// decision.
func admit(ctx context.Context, tx pgx.Tx, decide func(decline.History, time.Time) decline.Verdict, c *charge.Charge, now time.Time, out *charge.Begun) (decline.Verdict, error) {
	if err := cardLock(ctx, tx, c.ProcessorAccount, c.Card.Fingerprint); err != nil {
		return decline.Verdict{}, err
	}
	h, err := cardHistory(ctx, tx, c.ProcessorAccount, c.Card.Fingerprint)
	if err != nil {
		return decline.Verdict{}, err
	}
	out.History = h
	v := decide(h, now)
	if err := recordDecision(ctx, tx, c, v, now); err != nil {
		return decline.Verdict{}, err
	}
	return v, nil
}

func recordDecision(ctx context.Context, tx pgx.Tx, c *charge.Charge, v decline.Verdict, now time.Time) error {
	counters, err := json.Marshal(v.Counters)
	if err != nil {
		return err
	}
	var notBefore *time.Time
	if !v.NotBefore.IsZero() {
		notBefore = &v.NotBefore
	}
	var chargeID *string
	if v.Allowed {
		chargeID = &c.ID
	}
	_, err = tx.Exec(ctx, `
		INSERT INTO reattempt_decisions (at, processor_account, fingerprint, network, merchant_id, charge_id, chain,
			reattempt_of, allowed, reason, rule, not_before, remaining, counters)
		VALUES ($1, $2, $3, $4, $5, $6, NULLIF($7, ''), NULLIF($8, ''), $9, NULLIF($10, ''), NULLIF($11, ''), $12, $13, $14)`,
		now, c.ProcessorAccount, c.Card.Fingerprint, c.Card.Network, c.MerchantID, chargeID, c.Chain, c.ReattemptOf,
		v.Allowed, string(v.Reason), string(v.Rule), notBefore, v.RemainingInWindow, counters)
	if err != nil {
		return fmt.Errorf("store: record reattempt decision: %w", err)
	}
	return nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func insertCardAttempt(ctx context.Context, tx pgx.Tx, c *charge.Charge, now time.Time) error {
	_, err := tx.Exec(ctx, `
		INSERT INTO card_attempts (charge_id, processor_account, fingerprint, network, merchant_id, chain, at, outcome,
			exp_month, exp_year)
		VALUES ($1, $2, $3, $4, $5, $6, $7, 'pending', $8, $9)
		ON CONFLICT (charge_id) DO UPDATE SET at = EXCLUDED.at, outcome = 'pending', class = NULL, category = NULL,
			mac = NULL, cap_reached = false`,
		c.ID, c.ProcessorAccount, c.Card.Fingerprint, c.Card.Network, c.MerchantID, c.Chain, now,
		c.Card.ExpMonth, c.Card.ExpYear)
	if err != nil {
		return fmt.Errorf("store: record card attempt: %w", err)
	}
	return nil
}

// createCharge admits and creates the key's charge: under the card's lock, the network
// rules decide on the database clock; an allowed charge is written with its pending card
// attempt, so that a racing charge on the same card counts it.
//
// locked says that the caller holds the card's lock already.
func createCharge(ctx context.Context, tx pgx.Tx, p charge.BeginParams, now time.Time, out *charge.Begun, locked bool) error {
	c := p.New
	c.Card = p.Card
	if c.Chain == "" {
		c.Chain = c.ID
	}
	// release frees the key of a charge that is not created: it stays bound to the
	// request's fingerprint, and names no charge.
	release := func() error {
		_, err := tx.Exec(ctx, `UPDATE idempotency_keys SET locked_until = NULL, charge_id = NULL, recovery_point = $3
			WHERE merchant_id = $1 AND key = $2`, p.MerchantID, p.Key, idempotency.PointStarted)
		return err
	}
	// Without its card the charge cannot be admitted: it is stored failed, retryably, and
	// a retry with the same key reads the card again.
	status, failCode, failRetry := "processing", (*string)(nil), (*bool)(nil)
	if c.Card == nil {
		code, retry := charge.CodeCardUnavailable, true
		status, failCode, failRetry = "failed", &code, &retry
	}
	var verdict *decline.Verdict
	if p.Admit != nil && c.Card != nil {
		if !locked {
			if err := cardLock(ctx, tx, c.ProcessorAccount, c.Card.Fingerprint); err != nil {
				return err
			}
		}
		h, err := cardHistory(ctx, tx, c.ProcessorAccount, c.Card.Fingerprint)
		if err != nil {
			return err
		}
		out.History = h
		v := p.Admit(h, now)
		if !v.Allowed {
			if err := recordDecision(ctx, tx, &c, v, now); err != nil {
				return err
			}
			out.Refused = &v
			return release()
		}
		verdict = &v
	}
	// An allowed decision is recorded by the statement that creates the charge.
	var (
		decAllowed                bool
		decRemaining              *int
		decCounters               []byte
		decNotBefore              *time.Time
		decReason, decRule, decFP string
	)
	if verdict != nil {
		decAllowed, decFP = true, c.Card.Fingerprint
		decRemaining = &verdict.RemainingInWindow
		decReason, decRule = string(verdict.Reason), string(verdict.Rule)
		if !verdict.NotBefore.IsZero() {
			decNotBefore = &verdict.NotBefore
		}
		var err error
		if decCounters, err = json.Marshal(verdict.Counters); err != nil {
			return err
		}
	}
	meta := []byte("{}")
	if c.Metadata != nil {
		var err error
		if meta, err = json.Marshal(c.Metadata); err != nil {
			return fmt.Errorf("store: charge metadata: %w", err)
		}
	}
	var card charge.Card
	if c.Card != nil {
		card = *c.Card
	}
	var created bool
	err := tx.QueryRow(ctx, `
		WITH c AS (
			INSERT INTO charges (id, merchant_id, amount, currency, payment_method, customer, reference,
				initiator, reattempt_mode, reattempt_of, chain, metadata, status, processor_key, processor_account,
				card_fingerprint, card_network, card_exp_month, card_exp_year, created_at, updated_at,
				failure_code, failure_retryable, finalized_at)
			VALUES ($1, $2, $3, $4, $5, NULLIF($6, ''), NULLIF($7, ''), $8, $9, NULLIF($10, ''), $11, $12, $22,
				$13, NULLIF($14, ''), NULLIF($15, ''), NULLIF($16, ''), NULLIF($17, 0), NULLIF($18, 0), $19, $19,
				$23, $24, CASE WHEN $22 = 'failed' THEN $19::timestamptz END)
			ON CONFLICT (merchant_id, reference) WHERE reference IS NOT NULL AND status IN ('processing', 'pending', 'succeeded')
			DO NOTHING
			RETURNING id
		),
		a AS (
			INSERT INTO card_attempts (charge_id, processor_account, fingerprint, network, merchant_id, chain, at, outcome,
				exp_month, exp_year)
			SELECT id, $14, $15, $16, $2, $11, $19, 'pending', $17, $18 FROM c WHERE $15 <> ''
		),
		k AS (
			-- A key seen before names its charge now; a new key named it when it was written.
			UPDATE idempotency_keys SET charge_id = c.id, recovery_point = $20 FROM c
			 WHERE merchant_id = $2 AND key = $21 AND charge_id IS DISTINCT FROM c.id
		),
		ev AS (
			INSERT INTO charge_events (charge_id, at, actor, action, reason, status_after)
			SELECT id, $19, 'gateway', 'created', NULLIF($25, ''), $22 FROM c
		),
		d AS (
			INSERT INTO reattempt_decisions (at, processor_account, fingerprint, network, merchant_id, charge_id, chain,
				reattempt_of, allowed, reason, rule, not_before, remaining, counters)
			SELECT $19, $14, $15, $16, $2, id, $11, NULLIF($10, ''), true, NULLIF($27, ''), NULLIF($28, ''), $29, $30, $31
			  FROM c WHERE $26
		)
		SELECT EXISTS (SELECT 1 FROM c)`,
		c.ID, c.MerchantID, c.Amount, c.Currency, c.PaymentMethod, c.Customer, c.Reference,
		string(c.Initiator), string(c.ReattemptMode), c.ReattemptOf, c.Chain, meta,
		c.ProcessorKey, c.ProcessorAccount, card.Fingerprint, card.Network, card.ExpMonth, card.ExpYear,
		now, idempotency.PointCreated, p.Key, status, failCode, failRetry, deref(failCode),
		decAllowed && decFP != "", decReason, decRule, decNotBefore, decRemaining, decCounters,
	).Scan(&created)
	if err != nil {
		return fmt.Errorf("store: create charge: %w", interpretError(err))
	}
	if !created {
		var id string
		err := tx.QueryRow(ctx, `SELECT id FROM charges WHERE merchant_id = $1 AND reference = $2
			AND status IN ('processing', 'pending', 'succeeded') LIMIT 1`, c.MerchantID, c.Reference).Scan(&id)
		if err != nil {
			return fmt.Errorf("store: find live reference: %w", interpretError(err))
		}
		out.DuplicateOf = id
		return release()
	}
	c.Status = charge.Status(status)
	if failCode != nil {
		c.Failure = &charge.Failure{Code: *failCode, Retryable: *failRetry}
	}
	c.IdempotencyKey = p.Key
	c.CreatedAt, c.UpdatedAt = now, now
	out.Created = true
	out.Charge = &c
	out.Record.ChargeID = c.ID
	return nil
}
