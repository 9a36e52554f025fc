package store

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/decline"
)

// A card's attempts are the charges made on it: a charge's card columns are its attempt in
// the card's history at its processor account (card_outcome NULL: none). The history is read
// by charges_card.

// cardLockSQL takes the lock of card $2 at processor account $1 until the transaction ends:
// the decisions of the network rules on one card, and the refusals that put it on record,
// happen one after the other.
const cardLockSQL = `SELECT pg_advisory_xact_lock(hashtextextended($1 || '/' || $2, 7263))`

// attemptColumns are a charge's card attempt, as scanAttempt reads them.
const attemptColumns = `a.id, COALESCE(a.chain, a.id), a.card_at, a.card_outcome, COALESCE(a.card_class, ''),
	COALESCE(a.card_network, ''), COALESCE(a.card_mac, 0), COALESCE(a.card_exp_month, 0), COALESCE(a.card_exp_year, 0),
	a.card_cap_reached, a.card_settled_at, COALESCE(a.card_hold, ''), a.payment_method, a.currency`

// cardHistorySQL reads the whole history of card $2 at processor account $1, in time order.
const cardHistorySQL = `SELECT ` + attemptColumns + ` FROM charges a
	WHERE a.processor_account = $1 AND a.card_fingerprint = $2 AND a.card_outcome IS NOT NULL
	ORDER BY a.card_at, a.id`

// cardStateSQL reads card $2's state at processor account $1.
const cardStateSQL = `SELECT compact, through_at, through_charge, stale, version FROM card_states
	WHERE processor_account = $1 AND fingerprint = $2`

// cardRecentSQL reads the attempts of card $2 at processor account $1 that its state does not
// hold: those after its checkpoint, or all of them when it is stale or $3 asks for the whole
// history; none for a card without a state (no refusal on record). The lower bound on
// card_at keeps the read to the range of the index after the checkpoint.
const cardRecentSQL = `
	WITH st AS (
		SELECT CASE WHEN stale OR $3 THEN '-infinity'::timestamptz ELSE through_at END AS at,
		       CASE WHEN stale OR $3 THEN '' ELSE through_charge END AS charge
		  FROM card_states WHERE processor_account = $1 AND fingerprint = $2
	)
	SELECT ` + attemptColumns + ` FROM charges a, st
	 WHERE a.processor_account = $1 AND a.card_fingerprint = $2 AND a.card_outcome IS NOT NULL
	   AND a.card_at >= st.at AND (a.card_at, a.id) > (st.at, st.charge)
	 ORDER BY a.card_at, a.id`

// chainAttemptsSQL reads the attempts of chain $3 on card $2 at processor account $1.
const chainAttemptsSQL = `SELECT ` + attemptColumns + ` FROM charges a
	WHERE (a.id = $3 OR (a.chain = $3 AND a.reattempt_of IS NOT NULL))
	  AND a.processor_account = $1 AND a.card_fingerprint = $2 AND a.card_outcome IS NOT NULL`

// writeCardStateSQL writes a card's new state, if it is still at the version it was read at.
const writeCardStateSQL = `UPDATE card_states SET compact = $3, through_at = $4, through_charge = $5, stale = false,
	version = version + 1 WHERE processor_account = $1 AND fingerprint = $2 AND version = $6`

// insertDecisionSQL records a decision of the network rules.
const insertDecisionSQL = `
	INSERT INTO reattempt_decisions (at, processor_account, fingerprint, network, merchant_id, charge_id, chain,
		reattempt_of, allowed, reason, rule, not_before, remaining, counters)
	VALUES ($1, $2, $3, $4, $5, NULLIF($6, ''), NULLIF($7, ''), NULLIF($8, ''), $9, NULLIF($10, ''), NULLIF($11, ''),
		$12, $13, $14)`

// scanAttempts reads the rows of a query on attemptColumns.
func scanAttempts(rows pgx.Rows) (decline.History, error) {
	h, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (decline.Attempt, error) {
		var (
			a                    decline.Attempt
			outcome, class, netw string
			mac, month, year     int
			settled              *time.Time
			hold                 string
		)
		err := r.Scan(&a.Charge, &a.Chain, &a.At, &outcome, &class, &netw, &mac, &month, &year, &a.CapReached, &settled,
			&hold, &a.PaymentMethod, &a.Currency)
		a.Hold = decline.ParseHold(hold)
		a.Outcome, a.Class, a.Network = decline.Outcome(outcome), decline.Class(class), decline.ParseNetwork(netw)
		a.MAC = decline.MAC(mac)
		a.Expiry = decline.Expiry{Year: year, Month: month}
		if settled != nil {
			a.KnownAt = *settled
		}
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

// cardHistory reads the whole history of a card at a processor account, in time order.
func cardHistory(ctx context.Context, q rowsQuerier, account, fingerprint string) (decline.History, error) {
	rows, err := q.Query(ctx, cardHistorySQL, account, fingerprint)
	if err != nil {
		return nil, fmt.Errorf("store: card history: %w", err)
	}
	return scanAttempts(rows)
}

// decisionArgs are insertDecisionSQL's arguments for d.
func decisionArgs(d *charge.Decision) ([]any, error) {
	counters, err := json.Marshal(d.Verdict.Counters)
	if err != nil {
		return nil, fmt.Errorf("store: decision counters: %w", err)
	}
	var notBefore *time.Time
	if !d.Verdict.NotBefore.IsZero() {
		notBefore = &d.Verdict.NotBefore
	}
	return []any{d.At, d.Account, d.Card.Fingerprint, d.Card.Network, d.MerchantID, d.ChargeID, d.Chain, d.ReattemptOf,
		d.Verdict.Allowed, string(d.Verdict.Reason), string(d.Verdict.Rule), notBefore, d.Verdict.RemainingInWindow,
		counters}, nil
}

// An attempt's start in the attempt log is the microseconds since its charge was created
// (created_at), where the log of migration 0014 wrote microseconds since 1970: a first
// attempt's start takes about 5 digits instead of 16. The two cannot be mistaken for each
// other: an absolute start is at least absoluteStartMicros (2001-09-09), an offset is decades
// below it.
// The charge_attempts view (migration 0023) reads both the same way.
const absoluteStartMicros = 1_000_000_000_000_000

// encodeAttempts is the attempt_log form of attempts of the charge created at created: one
// JSON array per attempt (see migration 0014), each attempt's start an offset from created
// (an absolute time when created is unknown, the zero time).
func encodeAttempts(as []charge.Attempt, created time.Time) []byte {
	if len(as) == 0 {
		return nil
	}
	b := make([]byte, 0, 96*len(as))
	b = append(b, '[')
	for i, a := range as {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = strconv.AppendInt(b, int64(a.N), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, attemptStart(a.StartedAt, created), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, a.DurationMS, 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, a.TimeoutMS, 10)
		b = append(b, ',')
		b = strconv.AppendQuote(b, a.Class)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(a.HTTPStatus), 10)
		b = append(b, ',')
		b = strconv.AppendQuote(b, a.ProcessorCode)
		b = append(b, ',')
		b = strconv.AppendQuote(b, a.RequestID)
		b = append(b, ',')
		b = strconv.AppendInt(b, a.RetryAfterMS, 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, a.BackoffMS, 10)
		b = append(b, ',')
		b = strconv.AppendFloat(b, a.BudgetTokensBefore, 'g', -1, 64)
		b = append(b, ',')
		b = strconv.AppendFloat(b, a.BudgetTokensAfter, 'g', -1, 64)
		b = append(b, ']')
	}
	return append(b, ']')
}

// attemptStart is the attempt log's form of an attempt started at started, of a charge
// created at created.
func attemptStart(started, created time.Time) int64 {
	if created.IsZero() {
		return started.UnixMicro()
	}
	return started.UnixMicro() - created.UnixMicro()
}

// decodeAttempts reads the attempt_log of the charge created at created.
func decodeAttempts(b []byte, created time.Time) ([]charge.Attempt, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var rows [][]json.RawMessage
	if err := json.Unmarshal(b, &rows); err != nil {
		return nil, fmt.Errorf("store: attempt log: %w", err)
	}
	out := make([]charge.Attempt, 0, len(rows))
	for _, r := range rows {
		if len(r) != 12 {
			return nil, fmt.Errorf("store: attempt log: an attempt of %d fields, want 12", len(r))
		}
		var (
			a       charge.Attempt
			started int64
		)
		for i, dst := range []any{&a.N, &started, &a.DurationMS, &a.TimeoutMS, &a.Class, &a.HTTPStatus, &a.ProcessorCode,
			&a.RequestID, &a.RetryAfterMS, &a.BackoffMS, &a.BudgetTokensBefore, &a.BudgetTokensAfter} {
			if err := json.Unmarshal(r[i], dst); err != nil {
				return nil, fmt.Errorf("store: attempt log field %d: %w", i, err)
			}
		}
		if started < absoluteStartMicros {
			started += created.UnixMicro()
		}
		a.StartedAt = time.UnixMicro(started).UTC()
		out = append(out, a)
	}
	return out, nil
}
