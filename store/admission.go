package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/decline"
	"github.com/paygate/paygate/idempotency"
)

// cardLockSQL takes the lock of card $2 at processor account $1 until the transaction ends
// (bindKeySQL takes the same lock).
const cardLockSQL = `SELECT pg_advisory_xact_lock(hashtextextended($1 || '/' || $2, 7263))`

// cardLock serialises the decisions on one card at one processor account: two charges
// racing for the last slot of a network cap are decided one after the other, each seeing
// the other's attempt.
func cardLock(ctx context.Context, tx pgx.Tx, account, fingerprint string) error {
	_, err := tx.Exec(ctx, cardLockSQL, account, fingerprint)
	if err != nil {
		return fmt.Errorf("store: lock card: %w", err)
	}
	return nil
}

// maxCardHistory bounds the attempts read for one card's decision.
const maxCardHistory = 1000

// cardHistorySQL reads the card's attempts at the processor account, newest first.
const cardHistorySQL = `
	SELECT charge_id, chain, at, outcome, COALESCE(class, ''), network, COALESCE(mac, 0),
		COALESCE(exp_month, 0), COALESCE(exp_year, 0), cap_reached
	  FROM card_attempts WHERE processor_account = $1 AND fingerprint = $2
	 ORDER BY at DESC LIMIT $3`

// cardHistory reads the card's attempts at the processor account, newest first.
func cardHistory(ctx context.Context, q rowsQuerier, account, fingerprint string) (decline.History, error) {
	rows, err := q.Query(ctx, cardHistorySQL, account, fingerprint, maxCardHistory)
	if err != nil {
		return nil, fmt.Errorf("store: card history: %w", err)
	}
	return collectHistory(rows)
}

// collectHistory reads the rows of cardHistorySQL.
func collectHistory(rows pgx.Rows) (decline.History, error) {
	h, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (decline.Attempt, error) {
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
	if err != nil {
		return nil, fmt.Errorf("store: card history: %w", err)
	}
	return h, nil
}

// rowsQuerier runs a query returning rows: a transaction or a pool.
type rowsQuerier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

// admit decides under the card's lock whether c may be attempted now. The caller records
// the decision (recordDecision) once it knows whether the attempt will be made.
func admit(ctx context.Context, tx pgx.Tx, decide func(decline.History, time.Time) decline.Verdict, c *charge.Charge, now time.Time, out *charge.Begun) (decline.Verdict, error) {
	if err := cardLock(ctx, tx, c.ProcessorAccount, c.Card.Fingerprint); err != nil {
		return decline.Verdict{}, err
	}
	h, err := cardHistory(ctx, tx, c.ProcessorAccount, c.Card.Fingerprint)
	if err != nil {
		return decline.Verdict{}, err
	}
	out.History = h
	return decide(h, now), nil
}

func recordDecision(ctx context.Context, tx pgx.Tx, c *charge.Charge, v decline.Verdict, now time.Time) error {
	st, err := decisionStmt(c, v, now)
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, st.sql, st.args...); err != nil {
		return fmt.Errorf("store: %s: %w", st.what, err)
	}
	return nil
}

// decisionStmt records a decision of the network rules on c.
func decisionStmt(c *charge.Charge, v decline.Verdict, now time.Time) (stmt, error) {
	counters, err := json.Marshal(v.Counters)
	if err != nil {
		return stmt{}, err
	}
	var notBefore *time.Time
	if !v.NotBefore.IsZero() {
		notBefore = &v.NotBefore
	}
	var chargeID *string
	if v.Allowed {
		chargeID = &c.ID
	}
	return stmt{what: "record reattempt decision", sql: `
		INSERT INTO reattempt_decisions (at, processor_account, fingerprint, network, merchant_id, charge_id, chain,
			reattempt_of, allowed, reason, rule, not_before, remaining, counters)
		VALUES ($1, $2, $3, $4, $5, $6, NULLIF($7, ''), NULLIF($8, ''), $9, NULLIF($10, ''), NULLIF($11, ''), $12, $13, $14)`,
		args: []any{now, c.ProcessorAccount, c.Card.Fingerprint, c.Card.Network, c.MerchantID, chargeID, c.Chain,
			c.ReattemptOf, v.Allowed, string(v.Reason), string(v.Rule), notBefore, v.RemainingInWindow, counters}}, nil
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
			mac = NULL, cap_reached = false, settled_at = NULL`,
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
	var hist decline.History
	if p.Admit != nil && p.Card != nil {
		if !locked {
			if err := cardLock(ctx, tx, p.New.ProcessorAccount, p.Card.Fingerprint); err != nil {
				return err
			}
		}
		var err error
		if hist, err = cardHistory(ctx, tx, p.New.ProcessorAccount, p.Card.Fingerprint); err != nil {
			return err
		}
	}
	plan, err := planCreation(p, now, hist, creationKnownKey, out)
	if err != nil {
		return err
	}
	for _, st := range plan.stmts {
		if st.scan == nil {
			_, err = tx.Exec(ctx, st.sql, st.args...)
		} else {
			err = tx.QueryRow(ctx, st.sql, st.args...).Scan(st.scan...)
		}
		if err != nil {
			return fmt.Errorf("store: %s: %w", st.what, interpretError(err))
		}
	}
	if plan.created != nil && !plan.res.created && plan.res.duplicateOf == "" {
		if plan.res.duplicateOf, err = liveReference(ctx, tx, p.MerchantID, p.New.Reference); err != nil {
			return err
		}
	}
	plan.apply(out)
	return nil
}

// stmt is one statement of a phase, with where its single row goes (nil: no row).
type stmt struct {
	what string
	sql  string
	args []any
	scan []any
}

// creation is what a new charge's admission decided, as the statements that record it.
type creation struct {
	stmts []stmt
	// created is the charge the statements create; nil when the rules refused it.
	created *charge.Charge
	refused *decline.Verdict
	res     struct {
		created     bool
		duplicateOf string
		// Of a clean creation (see creationClean): whether the card's history held nothing
		// but approvals, whether the key was new, and the database clock.
		clean, fresh bool
		now          time.Time
	}
}

// creationMode says how a key's new charge is created.
type creationMode int

const (
	// creationNewKey: the key was written naming the charge, in the same transaction.
	creationNewKey creationMode = iota
	// creationKnownKey: the key was seen before; the statement names the charge on it.
	creationKnownKey
	// creationClean: one statement checks that the key is new and that the card's history
	// holds nothing but approvals, and only then writes the key with the charge, on the
	// database clock; the caller holds the card's lock.
	creationClean
)

// apply reports the creation's outcome in out once its statements ran.
func (cr *creation) apply(out *charge.Begun) {
	switch {
	case cr.refused != nil:
		out.Refused = cr.refused
	case !cr.res.created:
		out.DuplicateOf = cr.res.duplicateOf
	default:
		out.Created = true
		out.Charge = cr.created
		out.Record.ChargeID = cr.created.ID
	}
}

// liveReference returns the live charge that carries a merchant's reference.
func liveReference(ctx context.Context, q querier, merchantID, reference string) (string, error) {
	var id string
	err := q.QueryRow(ctx, `SELECT id FROM charges WHERE merchant_id = $1 AND reference = $2
		AND status IN ('processing', 'pending', 'succeeded') LIMIT 1`, merchantID, reference).Scan(&id)
	if err != nil {
		return "", fmt.Errorf("store: find live reference: %w", interpretError(err))
	}
	return id, nil
}

// planCreation decides on the card's history (read under its lock) whether the key's new
// charge may be attempted, and returns the statements that record the decision: a refusal
// with the key released, or the charge with its key, card attempt, decision and audit
// event. It runs no SQL itself, so that the statements can travel with the commit.
func planCreation(p charge.BeginParams, now time.Time, hist decline.History, mode creationMode, out *charge.Begun) (*creation, error) {
	c := p.New
	c.Card = p.Card
	if c.Chain == "" {
		c.Chain = c.ID
	}
	cr := &creation{}
	// Without its card the charge cannot be admitted: it is stored failed, retryably, and
	// a retry with the same key reads the card again.
	status, failCode, failRetry := "processing", (*string)(nil), (*bool)(nil)
	if c.Card == nil {
		code, retry := charge.CodeCardUnavailable, true
		status, failCode, failRetry = "failed", &code, &retry
	}
	var verdict *decline.Verdict
	if p.Admit != nil && c.Card != nil {
		out.History = hist
		v := p.Admit(hist, now)
		if !v.Allowed {
			st, err := decisionStmt(&c, v, now)
			if err != nil {
				return nil, err
			}
			// The key stays bound to the request's fingerprint, and names no charge.
			cr.stmts = append(cr.stmts, st, stmt{what: "release key",
				sql: `UPDATE idempotency_keys SET locked_until = NULL, charge_id = NULL, recovery_point = $3
					WHERE merchant_id = $1 AND key = $2`,
				args: []any{p.MerchantID, p.Key, idempotency.PointStarted}})
			cr.refused = &v
			return cr, nil
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
			return nil, err
		}
	}
	meta := []byte("{}")
	if c.Metadata != nil {
		var err error
		if meta, err = json.Marshal(c.Metadata); err != nil {
			return nil, fmt.Errorf("store: charge metadata: %w", err)
		}
	}
	var card charge.Card
	if c.Card != nil {
		card = *c.Card
	}
	args := pgx.NamedArgs{
		"id": c.ID, "merchant": c.MerchantID, "amount": c.Amount, "currency": c.Currency,
		"payment_method": c.PaymentMethod, "customer": c.Customer, "reference": c.Reference,
		"initiator": string(c.Initiator), "mode": string(c.ReattemptMode), "reattempt_of": c.ReattemptOf,
		"chain": c.Chain, "metadata": meta, "processor_key": c.ProcessorKey, "account": c.ProcessorAccount,
		"fingerprint": card.Fingerprint, "network": card.Network, "exp_month": card.ExpMonth, "exp_year": card.ExpYear,
		"now": now, "point": idempotency.PointCreated, "key": p.Key, "status": status,
		"fail_code": failCode, "fail_retry": failRetry, "reason": deref(failCode),
		"dec_reason": decReason, "dec_rule": decRule, "dec_not_before": decNotBefore, "dec_remaining": decRemaining,
		"dec_counters": decCounters, "started": idempotency.PointStarted,
		"request_fp": p.Fingerprint[:], "lock_for": p.LockFor,
	}
	sql := assemble(createVariant{card: card.Fingerprint != "", decision: decAllowed && decFP != "",
		nameOnKey: mode == creationKnownKey, reference: c.Reference != "", clean: mode == creationClean}, createSQL)
	sql, vals, err := positional(sql, args)
	if err != nil {
		return nil, err
	}
	scan := []any{&cr.res.created, &cr.res.duplicateOf}
	if mode == creationClean {
		scan = []any{&cr.res.clean, &cr.res.fresh, &cr.res.created, &cr.res.now}
	}
	cr.stmts = append(cr.stmts, stmt{what: "create charge", sql: sql, args: vals, scan: scan})
	c.Status = charge.Status(status)
	if failCode != nil {
		c.Failure = &charge.Failure{Code: *failCode, Retryable: *failRetry}
	}
	c.IdempotencyKey = p.Key
	c.CreatedAt, c.UpdatedAt = now, now
	cr.created = &c
	return cr, nil
}

// createVariant names the parts of createSQL a charge needs.
type createVariant struct{ card, decision, nameOnKey, reference, clean bool }

// createSQL is the statement that creates an admitted charge with everything that goes with
// it, with only the parts it needs: the card attempt of a charge with a card, the allowed
// decision of the network rules, naming the charge on a key seen before (a new key named it
// when it was written), and, for a charge with a reference, what happens when the reference
// is live on another charge: the charge is not created, the key is released (bound to the
// request's fingerprint, naming no charge) and the statement returns the live charge's id
// when its snapshot sees it. Each variant is one prepared statement.
func createSQL(v createVariant) string {
	conflict := ""
	if v.reference {
		conflict = `
		ON CONFLICT (merchant_id, reference) WHERE reference IS NOT NULL AND reference_duplicate_of IS NULL
			AND status IN ('processing', 'pending', 'succeeded')
		DO NOTHING`
	}
	var ctes []string
	guard := ""
	if v.clean {
		ctes = append(ctes, `clock AS (SELECT clock_timestamp() AS t)`, `clean AS (
		SELECT NOT EXISTS (SELECT 1 FROM card_attempts WHERE processor_account = @account AND fingerprint = @fingerprint
			AND outcome IS DISTINCT FROM 'approved') AS ok
	)`, `fresh AS (
		SELECT NOT EXISTS (SELECT 1 FROM idempotency_keys WHERE merchant_id = @merchant AND key = @key) AS ok
	)`)
		guard = `
		WHERE (SELECT ok FROM clean) AND (SELECT ok FROM fresh)`
	}
	ctes = append(ctes, `c AS (
		INSERT INTO charges (id, merchant_id, amount, currency, payment_method, customer, reference,
			initiator, reattempt_mode, reattempt_of, chain, metadata, status, processor_key, processor_account,
			card_fingerprint, card_network, card_exp_month, card_exp_year, created_at, updated_at,
			failure_code, failure_retryable, finalized_at)
		SELECT @id, @merchant, @amount, @currency, @payment_method, NULLIF(@customer, ''), NULLIF(@reference, ''),
			@initiator, @mode, NULLIF(@reattempt_of, ''), @chain, @metadata, @status, @processor_key,
			NULLIF(@account, ''), NULLIF(@fingerprint, ''), NULLIF(@network, ''), NULLIF(@exp_month::int, 0),
			NULLIF(@exp_year::int, 0), @now, @now, @fail_code, @fail_retry,
			CASE WHEN @status = 'failed' THEN @now::timestamptz END`+guard+conflict+`
		RETURNING id
	)`, `ev AS (
		INSERT INTO charge_events (charge_id, at, actor, action, reason, status_after)
		SELECT id, @now, 'gateway', 'created', NULLIF(@reason, ''), @status FROM c
	)`)
	if v.card {
		ctes = append(ctes, `a AS (
		INSERT INTO card_attempts (charge_id, processor_account, fingerprint, network, merchant_id, chain, at, outcome,
			exp_month, exp_year)
		SELECT id, @account, @fingerprint, @network, @merchant, @chain, @now, 'pending', @exp_month, @exp_year FROM c
	)`)
	}
	if v.decision {
		ctes = append(ctes, `d AS (
		INSERT INTO reattempt_decisions (at, processor_account, fingerprint, network, merchant_id, charge_id, chain,
			reattempt_of, allowed, reason, rule, not_before, remaining, counters)
		SELECT @now, @account, @fingerprint, @network, @merchant, id, @chain, NULLIF(@reattempt_of, ''), true,
			NULLIF(@dec_reason, ''), NULLIF(@dec_rule, ''), @dec_not_before, @dec_remaining, @dec_counters
		  FROM c
	)`)
	}
	if v.nameOnKey {
		ctes = append(ctes, `k AS (
		UPDATE idempotency_keys SET charge_id = c.id, recovery_point = @point FROM c
		 WHERE merchant_id = @merchant AND key = @key AND charge_id IS DISTINCT FROM c.id
	)`)
	}
	if v.clean {
		// No ON CONFLICT: a request racing with the same new key makes the statement fail,
		// and the phase then runs the long way.
		ctes = append(ctes, `k AS (
		INSERT INTO idempotency_keys (merchant_id, key, fingerprint, charge_id, recovery_point, locked_until,
			created_at, last_used_at)
		SELECT @merchant, @key, @request_fp, id, @point, @now + @lock_for::interval, @now, @now FROM c
	)`)
		sql := "\n\tWITH " + strings.Join(ctes, ",\n\t") + `
	SELECT (SELECT ok FROM clean), (SELECT ok FROM fresh), EXISTS (SELECT 1 FROM c), (SELECT t FROM clock)`
		return strings.ReplaceAll(sql, "@now", "(SELECT t FROM clock)")
	}
	result := `
	SELECT EXISTS (SELECT 1 FROM c), ''`
	if v.reference {
		ctes = append(ctes, `r AS (
		UPDATE idempotency_keys SET locked_until = NULL, charge_id = NULL, recovery_point = @started
		 WHERE merchant_id = @merchant AND key = @key AND NOT EXISTS (SELECT 1 FROM c)
	)`)
		result = `
	SELECT EXISTS (SELECT 1 FROM c),
		COALESCE((SELECT l.id FROM charges l WHERE NOT EXISTS (SELECT 1 FROM c) AND l.merchant_id = @merchant
			AND l.reference = @reference AND l.status IN ('processing', 'pending', 'succeeded') LIMIT 1), '')`
	}
	return "\n\tWITH " + strings.Join(ctes, ",\n\t") + result
}
