package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/paygate/paygate/charge"
	"github.com/paygate/paygate/idempotency"
)

var _ charge.Store = (*DB)(nil)

// createSQL writes a new key with its new charge, on the database clock, if the card has no
// refusal on record (no card_states row); it returns the clock, or no row when the card has
// one. The charge's times are the key's creation; the key's lock ends $5 after a reading of
// the clock taken with it. A key or a live reference that exists makes it fail on a unique
// index. Its arguments have base types (a domain-typed argument would be sent as text and
// parsed by the domain's input function at every call); the insert checks the domains.
const createSQL = `
	WITH k AS (
		INSERT INTO idempotency_keys (merchant_id, key, fingerprint, charge_id, locked_until, created_at)
		SELECT $1, $2, $3, $4, clock_timestamp() + $5::interval, clock_timestamp()
		 WHERE NOT EXISTS (SELECT 1 FROM card_states WHERE processor_account = $6 AND fingerprint = $7)
		RETURNING created_at
	)
	INSERT INTO charges (id, merchant_id, amount, currency, payment_method, customer, reference, initiator,
		reattempt_mode, metadata, status, processor_account, card_fingerprint, card_network, card_exp_month,
		card_exp_year, idempotency_key, card_at, card_outcome, created_at, updated_at, live)
	SELECT $4, $1, $8::bigint, $9::text, $10, NULLIF($11, ''), NULLIF($12, ''), $13::text, $14::text, $15, 'processing', NULLIF($6, ''), $7,
		NULLIF($16, ''), NULLIF($17::int, 0), NULLIF($18::int, 0), $2, k.created_at, 'pending', k.created_at, k.created_at,
		true
	  FROM k
	RETURNING created_at`

// createOne writes a charge alone: the card's lock and createSQL travel in one round trip,
// as one transaction.
func (db *DB) createOne(ctx context.Context, cr charge.Creation, meta []byte) (time.Time, error) {
	c := cr.Charge
	tx, err := db.pipeline(ctx)
	if err != nil {
		return time.Time{}, err
	}
	defer tx.close(ctx)
	var created *time.Time
	b := &pgx.Batch{}
	b.Queue(cardLockSQL, c.ProcessorAccount, c.Card.Fingerprint)
	b.Queue(createSQL, c.MerchantID, cr.Key, cr.Fingerprint[:idempotency.MatchedLen], c.ID, cr.LockFor, c.ProcessorAccount, c.Card.Fingerprint,
		c.Amount, c.Currency, c.PaymentMethod, c.Customer, c.Reference, string(c.Initiator), string(c.ReattemptMode), meta,
		c.Card.Network, c.Card.ExpMonth, c.Card.ExpYear)
	err = tx.send(ctx, b, true, func(br pgx.BatchResults) error {
		if _, err := br.Exec(); err != nil {
			return fmt.Errorf("store: lock card: %w", err)
		}
		err := br.QueryRow().Scan(&created)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		return interpretError(err)
	})
	var conflict *ConflictError
	switch {
	case errors.As(err, &conflict) && (conflict.Constraint == "idempotency_keys_pkey" || conflict.Constraint == "charges_live_reference"):
		return time.Time{}, charge.ErrNotApplied
	case err != nil:
		return time.Time{}, fmt.Errorf("store: create charge: %w", err)
	case created == nil:
		return time.Time{}, charge.ErrNotApplied
	}
	return *created, nil
}

// maxBeginRuns bounds how often Begin runs its transaction again after losing a race on a
// unique key (another request took the key, the reference or the chain's live reattempt
// between the snapshot and the writes: the next snapshot shows it).
const maxBeginRuns = 4

// Begin implements charge.Store.
func (db *DB) Begin(ctx context.Context, q charge.SnapshotQuery, decide func(charge.Snapshot) (charge.Plan, error)) (charge.Plan, error) {
	for run := 1; ; run++ {
		p, err := db.beginOnce(ctx, q, decide)
		var conflict *ConflictError
		raced := errors.As(err, &conflict) || retryableTxError(err)
		if err == nil || !raced || run >= maxBeginRuns || ctx.Err() != nil {
			return p, err
		}
	}
}

// The snapshot's reads, after the card's lock.
const (
	keySQL = `SELECT fingerprint, COALESCE(charge_id, ''), locked_until FROM idempotency_keys
		WHERE merchant_id = $1 AND key = $2 FOR UPDATE`
	keyChargeSQL = `SELECT ` + chargeColumns + `, c.response_status, c.response_body FROM charges c
		WHERE c.id = (SELECT charge_id FROM idempotency_keys WHERE merchant_id = $1 AND key = $2) AND c.merchant_id = $1`
	liveReferenceSQL = `SELECT id FROM charges WHERE merchant_id = $1 AND reference = $2 AND live
		AND reference_duplicate_of IS NULL
		AND id IS DISTINCT FROM (SELECT charge_id FROM idempotency_keys WHERE merchant_id = $1 AND key = $3) LIMIT 1`
	liveReattemptSQL = `SELECT id FROM charges WHERE chain = $1 AND reattempt_of IS NOT NULL AND live
		AND id IS DISTINCT FROM (SELECT charge_id FROM idempotency_keys WHERE merchant_id = $2 AND key = $3)
		ORDER BY reattempt_duplicate_of IS NOT NULL LIMIT 1`
)

func (db *DB) beginOnce(ctx context.Context, q charge.SnapshotQuery, decide func(charge.Snapshot) (charge.Plan, error)) (charge.Plan, error) {
	tx, err := db.pipeline(ctx)
	if err != nil {
		return charge.Plan{}, err
	}
	defer tx.close(ctx)
	s, err := db.snapshot(ctx, tx, q)
	if err != nil {
		return charge.Plan{}, err
	}
	p, err := decide(s)
	if err == nil && p.NeedFullHistory {
		q.FullHistory = true
		if s.Card, err = readCardState(ctx, tx, q); err != nil {
			return charge.Plan{}, err
		}
		if p, err = decide(s); err == nil && p.NeedFullHistory {
			err = errors.New("store: the plan needs the card's whole history, which it was given")
		}
	}
	if err != nil {
		return charge.Plan{}, err
	}
	b, err := planBatch(q, p)
	if err != nil {
		return charge.Plan{}, err
	}
	n := len(b.QueuedQueries)
	if err := tx.send(ctx, b, true, func(br pgx.BatchResults) error {
		for range n {
			if _, err := br.Exec(); err != nil {
				return interpretError(err)
			}
		}
		return nil
	}); err != nil {
		return charge.Plan{}, fmt.Errorf("store: first phase: %w", err)
	}
	return p, nil
}

// snapshot reads a request's snapshot in one round trip: BEGIN, the card's lock, then the
// reads.
func (db *DB) snapshot(ctx context.Context, tx *pipelinedTx, q charge.SnapshotQuery) (charge.Snapshot, error) {
	var s charge.Snapshot
	card := q.Card != nil && q.Card.Fingerprint != ""
	b := &pgx.Batch{}
	if card {
		b.Queue(cardLockSQL, q.Account, q.Card.Fingerprint)
	}
	b.Queue(`SELECT clock_timestamp()`)
	b.Queue(keySQL, q.MerchantID, q.Key)
	b.Queue(keyChargeSQL, q.MerchantID, q.Key)
	if card {
		b.Queue(cardStateSQL, q.Account, q.Card.Fingerprint)
		b.Queue(cardRecentSQL, q.Account, q.Card.Fingerprint, q.FullHistory)
		if q.Chain != "" {
			b.Queue(chainAttemptsSQL, q.Account, q.Card.Fingerprint, q.Chain)
		}
	}
	if q.Reference != "" {
		b.Queue(liveReferenceSQL, q.MerchantID, q.Reference, q.Key)
	}
	if q.Chain != "" {
		b.Queue(liveReattemptSQL, q.Chain, q.MerchantID, q.Key)
	}
	err := tx.send(ctx, b, false, func(br pgx.BatchResults) error {
		if card {
			if _, err := br.Exec(); err != nil {
				return fmt.Errorf("store: lock card: %w", err)
			}
		}
		if err := br.QueryRow().Scan(&s.Now); err != nil {
			return fmt.Errorf("store: clock: %w", err)
		}
		var rec idempotency.Record
		var fp []byte
		err := br.QueryRow().Scan(&fp, &rec.ChargeID, &rec.LockedUntil)
		switch {
		case err == nil:
			rec.MerchantID, rec.Key = q.MerchantID, q.Key
			copy(rec.Fingerprint[:], fp)
			s.Key = &rec
		case !errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("store: read key: %w", err)
		}
		var (
			status *int
			body   []byte
		)
		c, err := scanCharge(rowWithTail{br.QueryRow(), []any{&status, &body}})
		switch {
		case err == nil:
			s.Charge = c
			if s.Key != nil && status != nil {
				s.Key.ResponseStatus = *status
				if s.Key.ResponseBody, err = decodeAnswer(body, c); err != nil {
					return err
				}
			}
		case !errors.Is(err, ErrNotFound):
			return fmt.Errorf("store: key's charge: %w", err)
		}
		if card {
			if s.Card, err = scanCardState(br, q); err != nil {
				return err
			}
		} else {
			s.Card.Clean = true
		}
		if q.Reference != "" {
			if err := br.QueryRow().Scan(&s.LiveReference); err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("store: live reference: %w", err)
			}
		}
		if q.Chain != "" {
			if err := br.QueryRow().Scan(&s.LiveReattempt); err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("store: live reattempt: %w", err)
			}
		}
		return nil
	})
	return s, err
}

// readCardState reads the card's state again, in its own round trip.
func readCardState(ctx context.Context, tx *pipelinedTx, q charge.SnapshotQuery) (charge.CardState, error) {
	if q.Card == nil || q.Card.Fingerprint == "" {
		return charge.CardState{Clean: true}, nil
	}
	b := &pgx.Batch{}
	b.Queue(cardStateSQL, q.Account, q.Card.Fingerprint)
	b.Queue(cardRecentSQL, q.Account, q.Card.Fingerprint, q.FullHistory)
	if q.Chain != "" {
		b.Queue(chainAttemptsSQL, q.Account, q.Card.Fingerprint, q.Chain)
	}
	var cs charge.CardState
	err := tx.send(ctx, b, false, func(br pgx.BatchResults) error {
		var err error
		cs, err = scanCardState(br, q)
		return err
	})
	return cs, err
}

// scanCardState reads the results of cardStateSQL, cardRecentSQL and (for a chain)
// chainAttemptsSQL.
func scanCardState(br pgx.BatchResults, q charge.SnapshotQuery) (charge.CardState, error) {
	var (
		cs      charge.CardState
		compact []byte
	)
	err := br.QueryRow().Scan(&compact, &cs.Through.At, &cs.Through.Charge, &cs.Stale, &cs.Version)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		cs.Clean = true
	case err != nil:
		return cs, fmt.Errorf("store: card state: %w", err)
	}
	rows, err := br.Query()
	if err != nil {
		return cs, fmt.Errorf("store: card history: %w", err)
	}
	recent, err := scanAttempts(rows)
	if err != nil {
		return cs, err
	}
	if !cs.Clean {
		cs.Recent, cs.Full = recent, cs.Stale || q.FullHistory
		if !cs.Full {
			if err := json.Unmarshal(compact, &cs.Compact); err != nil {
				return cs, fmt.Errorf("store: card state: %w", err)
			}
		}
	}
	if q.Chain != "" {
		rows, err := br.Query()
		if err != nil {
			return cs, fmt.Errorf("store: chain attempts: %w", err)
		}
		if cs.Chain, err = scanAttempts(rows); err != nil {
			return cs, err
		}
	}
	return cs, nil
}

// The first phase's writes.
const (
	insertKeySQL = `INSERT INTO idempotency_keys (merchant_id, key, fingerprint, charge_id, locked_until, created_at)
		VALUES ($1, $2, $3, NULLIF($4, ''), $5, $6)`
	lockKeySQL = `UPDATE idempotency_keys SET locked_until = $3, charge_id = NULLIF($4, '')
		WHERE merchant_id = $1 AND key = $2`
	insertChargeSQL = `
		INSERT INTO charges (id, merchant_id, amount, currency, payment_method, customer, reference, initiator,
			reattempt_mode, reattempt_of, chain, metadata, status, processor_account, card_fingerprint, card_network,
			card_exp_month, card_exp_year, idempotency_key, card_at, card_outcome, failure_code, failure_retryable,
			created_at, updated_at, finalized_at, live)
		VALUES ($1, $2, $3::bigint, $4::text, $5, NULLIF($6, ''), NULLIF($7, ''), $8::text, $9::text, NULLIF($10, ''), NULLIF($11, $1), $12, $13::text,
			NULLIF($14, ''), NULLIF($15, ''), NULLIF($16, ''), NULLIF($17::int, 0), NULLIF($18::int, 0), $19,
			CASE WHEN $15 <> '' THEN $20::timestamptz END, CASE WHEN $15 <> '' THEN 'pending' END, $21, $22,
			$20, $20, CASE WHEN $13 = 'failed' THEN $20::timestamptz END, $23)`
	createdEventSQL = `INSERT INTO charge_events (charge_id, at, actor, action, reason, status_after)
		VALUES ($1, $2, 'gateway', 'created', NULLIF($3, ''), $4)`
	recordCardSQL = `UPDATE charges SET card_fingerprint = $2, card_network = NULLIF($3, ''), card_exp_month = NULLIF($4::int, 0),
		card_exp_year = NULLIF($5::int, 0) WHERE id = $1`
	reopenSQL = `UPDATE charges SET status = 'processing', live = true, failure_code = NULL, failure_retryable = NULL, updated_at = $2,
		finalized_at = NULL, card_at = $2, card_outcome = 'pending', card_class = NULL, card_category = NULL,
		card_mac = NULL, card_cap_reached = false, card_settled_at = NULL WHERE id = $1`
)

// planBatch returns the statements that apply the writes of p, in order.
func planBatch(q charge.SnapshotQuery, p charge.Plan) (*pgx.Batch, error) {
	w := p.Writes
	b := &pgx.Batch{}
	if w.InsertKey {
		b.Queue(insertKeySQL, q.MerchantID, q.Key, q.Fingerprint[:idempotency.MatchedLen], w.KeyCharge, w.LockUntil, p.Now)
	}
	if w.LockKey {
		b.Queue(lockKeySQL, q.MerchantID, q.Key, w.LockUntil, w.KeyCharge)
	}
	c := p.Charge
	if w.CreateCharge {
		meta, err := metadataJSON(c.Metadata)
		if err != nil {
			return nil, err
		}
		var card charge.Card
		if c.Card != nil {
			card = *c.Card
		}
		var failCode *string
		var failRetry *bool
		if c.Failure != nil {
			failCode, failRetry = &c.Failure.Code, &c.Failure.Retryable
		}
		b.Queue(insertChargeSQL, c.ID, c.MerchantID, c.Amount, c.Currency, c.PaymentMethod, c.Customer, c.Reference,
			string(c.Initiator), string(c.ReattemptMode), c.ReattemptOf, c.Chain, meta, string(c.Status), c.ProcessorAccount,
			card.Fingerprint, card.Network, card.ExpMonth, card.ExpYear, c.IdempotencyKey, p.Now, failCode, failRetry,
			c.Status.Live())
		if c.Card != nil {
			at := p.Now
			c.CardAt = &at
		}
	}
	if w.CreatedEvent {
		reason := ""
		if c.Failure != nil {
			reason = c.Failure.Code
		}
		b.Queue(createdEventSQL, c.ID, p.Now, reason, string(c.Status))
	}
	if w.RecordCard {
		b.Queue(recordCardSQL, c.ID, c.Card.Fingerprint, c.Card.Network, c.Card.ExpMonth, c.Card.ExpYear)
	}
	if w.Reopen {
		b.Queue(reopenSQL, c.ID, p.Now)
		at := p.Now
		c.CardAt = &at
	}
	if d := w.Decision; d != nil {
		args, err := decisionArgs(d)
		if err != nil {
			return nil, err
		}
		b.Queue(insertDecisionSQL, args...)
	}
	if cs := w.CardState; cs != nil {
		compact, err := json.Marshal(cs.Compact)
		if err != nil {
			return nil, fmt.Errorf("store: card state: %w", err)
		}
		if cs.Compact == nil {
			compact = []byte("[]")
		}
		through := cs.Through.At
		if through.IsZero() {
			through = minTime
		}
		b.Queue(writeCardStateSQL, cs.Account, cs.Fingerprint, compact, through, cs.Through.Charge, cs.Version)
	}
	return b, nil
}

// minTime stands for a checkpoint before every attempt ('-infinity' for PostgreSQL's ordering
// of the card's attempts, which are all later).
var minTime = time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)

// metadataJSON is the metadata column of a charge.
func metadataJSON(m map[string]string) ([]byte, error) {
	if m == nil {
		return []byte("{}"), nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("store: charge metadata: %w", err)
	}
	return b, nil
}
