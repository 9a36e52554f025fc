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
)

// ReviewItem is a charge waiting for a person, with why and the evidence gathered so far.
type ReviewItem struct {
	Charge   *charge.Charge
	Reason   string
	Rank     int
	Since    time.Time
	Evidence json.RawMessage // the last reconciliation check
	// Checks are all the charge's reconciliation checks, oldest first: the evidence
	// gathered so far.
	Checks []json.RawMessage
}

// ReviewQueue returns the merchant's charges in review: the riskiest first (processor
// evidence contradicting a manual resolution), then the oldest charge first, each with every
// check made so far.
func (db *DB) ReviewQueue(ctx context.Context, merchantID string, limit int) ([]ReviewItem, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT `+chargeColumns+`, COALESCE(r.review_reason, ''), r.review_rank, COALESCE(r.review_since, c.created_at),
			(SELECT k.body FROM reconciliation_checks k WHERE k.charge_id = c.id ORDER BY k.n DESC LIMIT 1),
			(SELECT COALESCE(array_agg(k.body ORDER BY k.n), '{}') FROM reconciliation_checks k WHERE k.charge_id = c.id)
		  FROM reconciliations r JOIN charges c ON c.id = r.charge_id
		 WHERE r.in_review AND c.merchant_id = $1
		 ORDER BY r.review_rank DESC, c.created_at, c.id
		 LIMIT $2`, merchantID, limit)
	if err != nil {
		return nil, fmt.Errorf("store: review queue: %w", err)
	}
	defer rows.Close()
	var out []ReviewItem
	for rows.Next() {
		var it ReviewItem
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

// Event is one entry of a charge's audit trail.
type Event struct {
	At           time.Time       `json:"at"`
	Actor        string          `json:"actor"`
	Action       string          `json:"action"`
	Reason       string          `json:"reason,omitempty"`
	StatusBefore string          `json:"status_before,omitempty"`
	StatusAfter  string          `json:"status_after,omitempty"`
	Note         string          `json:"note,omitempty"`
	Evidence     json.RawMessage `json:"evidence,omitempty"`
}

// Reconciliation is a charge's reconciliation state and checks.
type Reconciliation struct {
	NextCheckAt   *time.Time        `json:"next_check_at"`
	InReview      bool              `json:"in_review"`
	ReviewReason  string            `json:"review_reason,omitempty"`
	ManualOutcome string            `json:"manual_outcome,omitempty"`
	Checks        []json.RawMessage `json:"checks"`
}

// ChargeTrail returns a merchant's charge's audit trail, oldest first, and its
// reconciliation (nil when it never had one). It returns charge.ErrNotFound for a charge
// of another merchant.
func (db *DB) ChargeTrail(ctx context.Context, merchantID, chargeID string) ([]Event, *Reconciliation, error) {
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
	events, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Event, error) {
		var e Event
		err := r.Scan(&e.At, &e.Actor, &e.Action, &e.Reason, &e.StatusBefore, &e.StatusAfter, &e.Note, &e.Evidence)
		return e, err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("store: charge events: %w", err)
	}
	var rec Reconciliation
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

// ErrReconcileFirst is returned by ManualResolve when no reconciliation check in the
// recent window found nothing conclusive, or the last one ran while an attempt could still
// execute: the processor must be asked (again) first.
var ErrReconcileFirst = errors.New("store: a recent reconciliation must have found nothing conclusive")

// ErrNotResolvable is returned by ManualResolve for a charge that has an outcome and is not
// in review.
var ErrNotResolvable = errors.New("store: the charge is neither pending nor in review")

// ErrAttemptInFlight is returned (as an *AttemptInFlightError) by ManualResolve while an
// attempt of the charge may still be executing at the processor: whatever a check finds
// then, the attempt may still take effect.
var ErrAttemptInFlight = errors.New("store: an attempt of the charge may still be executing")

// AttemptInFlightError is an ErrAttemptInFlight that says until when an attempt may execute.
type AttemptInFlightError struct {
	Until time.Time
}

func (e *AttemptInFlightError) Error() string {
	return "store: an attempt of the charge may still be executing until " + e.Until.UTC().Format(time.RFC3339Nano)
}

// Is makes errors.Is(err, ErrAttemptInFlight) hold.
func (e *AttemptInFlightError) Is(target error) bool { return target == ErrAttemptInFlight }

// DefaultInFlightMargin is how long after an attempt's own timeout the processor may still
// be executing it, by default: a client that gave up has not stopped the processor.
const DefaultInFlightMargin = 30 * time.Second

// checkRunsAtMost bounds a reconciliation check's run (the janitor's check job times out
// after it): a replay of the charge's request is sent, and waited for, within it.
const checkRunsAtMost = 2 * time.Minute

// inFlight is what says whether an attempt of a charge may still be executing.
type inFlight struct {
	// attemptsEnd is the latest of the recorded attempts' starts plus their timeouts.
	attemptsEnd *time.Time
	// open: the charge's request still runs (the charge is processing); lockedUntil is
	// when its key's lock expires.
	open        bool
	lockedUntil *time.Time
	// replayAt is the start of the last check whose replay of the request got no answer.
	replayAt *time.Time
}

// until returns when every attempt has stopped executing at the latest, given margin (see
// DefaultInFlightMargin) and the database clock now; zero when no attempt was made: each
// recorded attempt may execute until its start plus its timeout plus margin; a request still
// open may send one until its key's lock expires (a request whose process died is resumed
// later by the completer: until now at least); an unanswered replay may execute until its
// check's bound plus margin.
func (f inFlight) until(margin time.Duration, now time.Time) time.Time {
	var until time.Time
	later := func(t time.Time) {
		if t.After(until) {
			until = t
		}
	}
	if f.attemptsEnd != nil {
		later(f.attemptsEnd.Add(margin))
	}
	if f.open {
		end := now
		if f.lockedUntil != nil && f.lockedUntil.After(end) {
			end = *f.lockedUntil
		}
		later(end.Add(margin))
	}
	if f.replayAt != nil {
		later(f.replayAt.Add(checkRunsAtMost + margin))
	}
	return until
}

// ManualResolution is an operator's resolution of a charge.
type ManualResolution struct {
	MerchantID string
	ChargeID   string
	Outcome    charge.Status // succeeded, declined or failed
	Note       string
	Actor      string        // who: "operator:" and the key id
	Within     time.Duration // how recent the inconclusive reconciliation must be
	// InFlightMargin is how long after an attempt's timeout it may still execute at the
	// processor (DefaultInFlightMargin when zero).
	InFlightMargin time.Duration
	// Caps are the card networks' reattempt caps the decline block's verdict is decided
	// under (zero fields: the defaults).
	Caps decline.Caps
}

// manualDecline returns the decline block and the card outcome of a charge an operator
// resolved as declined at now: no issuer code is known, so the code names the operator and
// the class is the one of a decline without evidence; the verdict on reattempting the card
// is the network rules' on the card's history.
func manualDecline(ctx context.Context, tx pgx.Tx, m ManualResolution, now time.Time) ([]byte, *charge.CardOutcome, error) {
	c, err := chargeByID(ctx, tx, m.MerchantID, m.ChargeID)
	if err != nil {
		return nil, nil, err
	}
	h, at, err := othersHistory(ctx, tx, c)
	if err != nil {
		return nil, nil, err
	}
	raw, co := charge.DeclineOutcome(c, nil, h, at, now, m.Caps)
	var blk charge.DeclineJSON
	if err := json.Unmarshal(raw, &blk); err != nil {
		return nil, nil, fmt.Errorf("store: decline block: %w", err)
	}
	blk.Code = "resolved_declined_by_operator"
	out, err := json.Marshal(blk)
	if err != nil {
		return nil, nil, fmt.Errorf("store: decline block: %w", err)
	}
	return out, co, nil
}

// ManualResolve settles a pending (or in review) charge by hand, in one transaction, and
// appends it to the audit trail with the state before and after and the last check's
// evidence. The charge keeps its reconciliation schedule: processor evidence that
// contradicts the resolution later reopens it at the top of the review queue, which ends the
// resolution (the charge is pending again and can be resolved again).
//
// It returns an *AttemptInFlightError while an attempt of the charge may still be executing
// at the processor (see inFlight.until), ErrNotResolvable for a charge with an outcome that
// is not in review, and ErrReconcileFirst unless the charge's last check found nothing
// conclusive, within m.Within, and started after every attempt had stopped executing.
func (db *DB) ManualResolve(ctx context.Context, m ManualResolution) (*charge.Charge, error) {
	margin := m.InFlightMargin
	if margin <= 0 {
		margin = DefaultInFlightMargin
	}
	var out *charge.Charge
	err := db.InTx(ctx, func(tx pgx.Tx) error {
		var (
			status       string
			inReview     bool
			inconclusive *time.Time
			lastCheck    *time.Time
			evidence     []byte
			now          time.Time
			flight       inFlight
		)
		err := tx.QueryRow(ctx, `
			SELECT c.status, COALESCE(r.in_review, false), r.last_inconclusive_at, r.last_check_at, clock_timestamp(),
				(SELECT k.body FROM reconciliation_checks k WHERE k.charge_id = c.id ORDER BY k.n DESC LIMIT 1),
				(SELECT max(a.started_at + a.timeout_ms * interval '1 millisecond') FROM charge_attempts a WHERE a.charge_id = c.id),
				(SELECT k.locked_until FROM idempotency_keys k WHERE k.merchant_id = c.merchant_id AND k.key = c.idempotency_key
				    AND k.charge_id = c.id),
				(SELECT max(k.at) FROM reconciliation_checks k
				  WHERE k.charge_id = c.id AND k.body->'evidence' ? 'replay'
				    AND COALESCE((k.body->'evidence'->'replay'->>'http_status')::int, 0) = 0
				    AND k.body->'evidence'->'replay'->>'class' IS DISTINCT FROM 'not_sent')
			  FROM charges c LEFT JOIN reconciliations r ON r.charge_id = c.id
			 WHERE c.id = $1 AND c.merchant_id = $2
			 FOR UPDATE OF c`, m.ChargeID, m.MerchantID,
		).Scan(&status, &inReview, &inconclusive, &lastCheck, &now, &evidence, &flight.attemptsEnd, &flight.lockedUntil,
			&flight.replayAt)
		if errors.Is(err, pgx.ErrNoRows) {
			return charge.ErrNotFound
		}
		if err != nil {
			return fmt.Errorf("store: lock charge: %w", err)
		}
		// A key's lock outlives its request's run, which ends with the charge's outcome (the lock
		// runs out by itself): a request is open while the charge is processing.
		flight.open = status == string(charge.StatusProcessing)
		until := flight.until(margin, now)
		if now.Before(until) {
			return &AttemptInFlightError{Until: until}
		}
		if status != string(charge.StatusPending) && !inReview {
			return ErrNotResolvable
		}
		// The check must have looked after every attempt stopped executing: one that found
		// nothing while an attempt was still running proves nothing.
		if inconclusive == nil || lastCheck == nil || !inconclusive.Equal(*lastCheck) || now.Sub(*inconclusive) > m.Within ||
			inconclusive.Before(until) {
			return ErrReconcileFirst
		}
		var failCode *string
		var failRetry *bool
		if m.Outcome == charge.StatusFailed {
			code, retry := "resolved_failed_by_operator", false
			failCode, failRetry = &code, &retry
		}
		// The card's history follows an operator's approval or decline. An operator's
		// "failed" is a judgement, not proof that nothing reached the card network: the
		// attempt stays in the history as it was (it keeps counting against the network
		// caps), and processor evidence found later settles it there.
		var (
			co          *charge.CardOutcome
			declineJSON []byte
		)
		switch m.Outcome {
		case charge.StatusSucceeded:
			co = &charge.CardOutcome{Outcome: "approved"}
		case charge.StatusDeclined:
			if declineJSON, co, err = manualDecline(ctx, tx, m, now); err != nil {
				return err
			}
		}
		dup, err := revivedDuplicates(ctx, tx, m.ChargeID, charge.Status(status), m.Outcome)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
			UPDATE charges SET status = $2, failure_code = $3, failure_retryable = $4, decline = $6, updated_at = $5, finalized_at = $5,
				reference_duplicate_of = COALESCE($7, reference_duplicate_of),
				reattempt_duplicate_of = COALESCE($8, reattempt_duplicate_of)
			 WHERE id = $1`, m.ChargeID, string(m.Outcome), failCode, failRetry, now, declineJSON, dup.reference, dup.reattempt); err != nil {
			return fmt.Errorf("store: resolve charge: %w", err)
		}
		if err := dup.record(ctx, tx, m.ChargeID, m.Actor, status, string(m.Outcome)); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `
			UPDATE reconciliations SET manual_outcome = $2, manual_at = $3, in_review = false, review_rank = 0,
				review_reason = NULL, review_since = NULL WHERE charge_id = $1`, m.ChargeID, string(m.Outcome), now); err != nil {
			return fmt.Errorf("store: record manual resolution: %w", err)
		}
		if co != nil {
			if err := cardOutcomeTx(ctx, tx, m.ChargeID, co); err != nil {
				return err
			}
		}
		if err := event(ctx, tx, m.ChargeID, m.Actor, "manual_resolution", "", status, string(m.Outcome), m.Note, evidence); err != nil {
			return err
		}
		out, err = chargeByID(ctx, tx, m.MerchantID, m.ChargeID)
		return err
	})
	if errors.Is(err, charge.ErrNotFound) {
		return nil, charge.ErrNotFound
	}
	return out, err
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

// CardHistoryOf returns the history of charge c's card at its processor account without c's
// own attempt, and the time the history records that attempt at: what a decline of c found
// later is judged against.
func (db *DB) CardHistoryOf(ctx context.Context, c *charge.Charge) (decline.History, time.Time, error) {
	return othersHistory(ctx, db.pool, c)
}
