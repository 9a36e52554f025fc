package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	events "github.com/paygate/paygate/event"
)

var _ events.Store = (*DB)(nil)

// eventColumns are an event of charge_event_log (l) as scanEvent reads it.
const eventColumns = `l.charge_id, l.key, l.created, l.type, l.merchant_id`

func scanEvent(r pgx.Row) (events.Event, error) {
	var (
		e        events.Event
		key, typ string
	)
	if err := r.Scan(&e.ChargeID, &key, &e.Created, &typ, &e.MerchantID); err != nil {
		return events.Event{}, err
	}
	e.ID, e.Type, e.Created = events.ID(e.ChargeID, key), events.Type(typ), e.Created.UTC()
	return e, nil
}

// EventByID implements events.Store.
func (db *DB) EventByID(ctx context.Context, merchantID, id string) (events.Event, error) {
	chargeID, key, ok := events.ParseID(id)
	if !ok {
		return events.Event{}, events.ErrNotFound
	}
	e, err := scanEvent(db.pool.QueryRow(ctx, `SELECT `+eventColumns+` FROM charge_event_log l
		WHERE l.charge_id = $1 AND l.key = $2 AND l.merchant_id = $3`, chargeID, key, merchantID))
	if errors.Is(err, pgx.ErrNoRows) {
		return events.Event{}, events.ErrNotFound
	}
	if err != nil {
		return events.Event{}, fmt.Errorf("store: event: %w", interpretError(err))
	}
	return e, nil
}

// eventsPage is the page of events after a cursor ($3, $4, $5: the cursor event's time,
// charge and key; $3 NULL: the first page), of type $2 (” every type), newest first.
const eventsPage = ` AND ($2 = '' OR l.type = $2)
	AND ($3::timestamptz IS NULL OR (l.created, l.charge_id, l.key) < ($3, $4::text, $5::text))
	ORDER BY l.created DESC, l.charge_id DESC, l.key DESC LIMIT $6`

// merchantEventsSQL reads a page of the merchant's events; chargeEventsSQL of one of its
// charges' ($7), which the planner reads by the charge's id. The merchant's list reads its
// charges' rows (no index on charges orders their outcomes: one would end the outcome's
// heap-only update).
const (
	merchantEventsSQL = `SELECT ` + eventColumns + ` FROM charge_event_log l WHERE l.merchant_id = $1 AND $7 = ''` + eventsPage
	chargeEventsSQL   = `SELECT ` + eventColumns + ` FROM charge_event_log l WHERE l.merchant_id = $1 AND l.charge_id = $7` + eventsPage
)

// Events returns a page of the merchant's events, newest first, and whether more follow.
func (db *DB) Events(ctx context.Context, p events.ListParams) ([]events.Event, bool, error) {
	var (
		at            *time.Time
		chargeID, key string
	)
	if p.After != nil {
		chargeID, key, _ = events.ParseID(p.After.ID)
		at = &p.After.Created
	}
	typ, limit := string(p.Type), p.Limit
	sql := merchantEventsSQL
	if p.ChargeID != "" {
		sql = chargeEventsSQL
	}
	rows, queryErr := db.pool.Query(ctx, sql, p.MerchantID, typ, at, chargeID, key, limit+1, p.ChargeID)
	if queryErr != nil {
		return nil, false, fmt.Errorf("store: events: %w", interpretError(queryErr))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (events.Event, error) { return scanEvent(r) })
	if err != nil {
		return nil, false, fmt.Errorf("store: events: %w", interpretError(err))
	}
	more := len(out) > limit
	if more {
		out = out[:limit]
	}
	return out, more, nil
}

// Deliveries returns the tries of delivering the merchant's event id, oldest first.
func (db *DB) Deliveries(ctx context.Context, merchantID, eventID string) ([]events.Delivery, error) {
	rows, err := db.pool.Query(ctx, `
		SELECT d.event_id, d.endpoint_id, d.attempt, d.at, COALESCE(d.http_status, 0), d.duration_ms,
			COALESCE(d.error, ''), d.delivered, d.next_retry_at
		  FROM event_deliveries d JOIN webhook_endpoints w ON w.id = d.endpoint_id
		 WHERE d.event_id = $1 AND w.merchant_id = $2 ORDER BY d.id`, eventID, merchantID)
	if err != nil {
		return nil, fmt.Errorf("store: deliveries: %w", interpretError(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (events.Delivery, error) {
		var d events.Delivery
		err := r.Scan(&d.EventID, &d.EndpointID, &d.Attempt, &d.At, &d.HTTPStatus, &d.DurationMS, &d.Error,
			&d.Delivered, &d.NextRetry)
		d.At = d.At.UTC()
		if d.NextRetry != nil {
			t := d.NextRetry.UTC()
			d.NextRetry = &t
		}
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: deliveries: %w", interpretError(err))
	}
	return out, nil
}

// endpointColumns are an endpoint (w) as scanEndpoint reads it.
const endpointColumns = `w.id, w.merchant_id, w.url, w.events, w.created_at, w.secret, COALESCE(w.previous_secret, ''),
	w.previous_expires_at, w.failing_since, w.disabled_at, COALESCE(w.disabled_reason, ''), w.deleted_at`

func scanEndpoint(r pgx.Row) (*events.Endpoint, error) {
	var (
		e     events.Endpoint
		types []string
	)
	err := r.Scan(&e.ID, &e.MerchantID, &e.URL, &types, &e.CreatedAt, &e.Secret, &e.Previous, &e.PreviousExpiresAt,
		&e.FailingSince, &e.DisabledAt, &e.DisabledReason, &e.DeletedAt)
	if err != nil {
		return nil, err
	}
	e.CreatedAt = e.CreatedAt.UTC()
	for _, t := range types {
		e.Events = append(e.Events, events.Type(t))
	}
	return &e, nil
}

// CreateEndpoint stores a new endpoint; its CreatedAt is set on the database's clock.
func (db *DB) CreateEndpoint(ctx context.Context, e *events.Endpoint) error {
	types := make([]string, 0, len(e.Events))
	for _, t := range e.Events {
		types = append(types, string(t))
	}
	err := db.pool.QueryRow(ctx, `INSERT INTO webhook_endpoints (id, merchant_id, url, events, secret)
		VALUES ($1, $2, $3, $4, $5) RETURNING created_at`, e.ID, e.MerchantID, e.URL, types, e.Secret).Scan(&e.CreatedAt)
	if err != nil {
		return fmt.Errorf("store: create endpoint: %w", interpretError(err))
	}
	e.CreatedAt = e.CreatedAt.UTC()
	return nil
}

// EndpointByID implements events.Store.
func (db *DB) EndpointByID(ctx context.Context, merchantID, id string) (*events.Endpoint, error) {
	e, err := scanEndpoint(db.pool.QueryRow(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints w
		WHERE w.id = $1 AND w.merchant_id = $2`, id, merchantID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, events.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: endpoint: %w", interpretError(err))
	}
	return e, nil
}

// Endpoints returns the merchant's endpoints that are not deleted, newest first.
func (db *DB) Endpoints(ctx context.Context, merchantID string) ([]*events.Endpoint, error) {
	rows, err := db.pool.Query(ctx, `SELECT `+endpointColumns+` FROM webhook_endpoints w
		WHERE w.merchant_id = $1 AND w.deleted_at IS NULL ORDER BY w.created_at DESC, w.id DESC`, merchantID)
	if err != nil {
		return nil, fmt.Errorf("store: endpoints: %w", interpretError(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (*events.Endpoint, error) { return scanEndpoint(r) })
	if err != nil {
		return nil, fmt.Errorf("store: endpoints: %w", interpretError(err))
	}
	return out, nil
}

// DeleteEndpoint deletes the merchant's endpoint: nothing more is delivered to it. It
// returns the endpoint as deleted, or events.ErrNotFound (a deleted one included).
func (db *DB) DeleteEndpoint(ctx context.Context, merchantID, id string) (*events.Endpoint, error) {
	e, err := scanEndpoint(db.pool.QueryRow(ctx, `UPDATE webhook_endpoints w SET deleted_at = clock_timestamp()
		WHERE w.id = $1 AND w.merchant_id = $2 AND w.deleted_at IS NULL RETURNING `+endpointColumns, id, merchantID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, events.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: delete endpoint: %w", interpretError(err))
	}
	return e, nil
}

// RotateSecret gives the merchant's endpoint the secret secret; the one it replaces keeps
// signing for overlap. It returns the endpoint as rotated, or events.ErrNotFound.
func (db *DB) RotateSecret(ctx context.Context, merchantID, id, secret string, overlap time.Duration) (*events.Endpoint, error) {
	e, err := scanEndpoint(db.pool.QueryRow(ctx, `UPDATE webhook_endpoints w SET previous_secret = w.secret,
			previous_expires_at = clock_timestamp() + $4::interval, secret = $3
		WHERE w.id = $1 AND w.merchant_id = $2 AND w.deleted_at IS NULL RETURNING `+endpointColumns,
		id, merchantID, secret, overlap))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, events.ErrNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("store: rotate secret: %w", interpretError(err))
	}
	return e, nil
}

// Tries implements events.Store.
func (db *DB) Tries(ctx context.Context, eventID, endpointID string, since time.Time) (int, error) {
	var n int
	err := db.pool.QueryRow(ctx, `SELECT count(*) FROM event_deliveries WHERE event_id = $1 AND endpoint_id = $2 AND at >= $3`,
		eventID, endpointID, since).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("store: delivery tries: %w", interpretError(err))
	}
	return n, nil
}

// recordDeliverySQL writes a try and what it means for its endpoint, in one statement.
const recordDeliverySQL = `
	WITH d AS (
		INSERT INTO event_deliveries (event_id, endpoint_id, attempt, at, http_status, duration_ms, error, delivered, next_retry_at)
		SELECT $1, $2, COALESCE((SELECT max(attempt) FROM event_deliveries WHERE event_id = $1 AND endpoint_id = $2), 0) + 1,
			$3, NULLIF($4::int, 0), $5, NULLIF($6, ''), $7, $8
		RETURNING attempt
	),
	w AS (
		UPDATE webhook_endpoints SET
			failing_since = CASE WHEN $7 THEN NULL ELSE COALESCE(failing_since, $3) END,
			disabled_at = CASE WHEN NOT $7 AND failing_since <= $3::timestamptz - $9::interval THEN $3 ELSE disabled_at END,
			disabled_reason = CASE WHEN NOT $7 AND failing_since <= $3::timestamptz - $9::interval
				THEN 'every delivery failed since ' || to_char(failing_since AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') ||
					'; the last: ' || COALESCE(NULLIF($6, ''), 'failed')
				ELSE disabled_reason END
		 WHERE id = $2
		RETURNING disabled_at IS NOT NULL
	)
	SELECT (SELECT attempt FROM d), COALESCE((SELECT * FROM w), false)`

// RecordDelivery implements events.Store.
func (db *DB) RecordDelivery(ctx context.Context, d events.Delivery, disableAfter time.Duration) (int, bool, error) {
	var (
		n        int
		disabled bool
	)
	err := db.pool.QueryRow(ctx, recordDeliverySQL, d.EventID, d.EndpointID, d.At, d.HTTPStatus, d.DurationMS, d.Error,
		d.Delivered, d.NextRetry, disableAfter).Scan(&n, &disabled)
	if err != nil {
		return 0, false, fmt.Errorf("store: record delivery: %w", interpretError(err))
	}
	return n, disabled, nil
}

// DispatchFrom implements events.Store.
func (db *DB) DispatchFrom(ctx context.Context) (time.Time, time.Time, error) {
	var w, now time.Time
	if err := db.pool.QueryRow(ctx, `SELECT watermark, clock_timestamp() FROM event_dispatch`).Scan(&w, &now); err != nil {
		return time.Time{}, time.Time{}, fmt.Errorf("store: event dispatch: %w", interpretError(err))
	}
	return w, now, nil
}

// AdvanceDispatch implements events.Store.
func (db *DB) AdvanceDispatch(ctx context.Context, to time.Time) error {
	if _, err := db.pool.Exec(ctx, `UPDATE event_dispatch SET watermark = GREATEST(watermark, $1)`, to); err != nil {
		return fmt.Errorf("store: event dispatch: %w", interpretError(err))
	}
	return nil
}

// newDeliveriesSQL finds the events created in [$1, $2) of the merchants with live
// endpoints, with each live endpoint that subscribes to them and existed then. It reads the
// events of charge_event_log from the charges' rows only for candidate charges, looked up
// by id (a scan of charge_event_log would read every charge): those created since $1 less
// $3 (a run writes its first outcome within its deadline), and those whose key's lock ends
// after $1 (the completer's run of a charge left mid-flight holds its key's lock). Every
// later change is an audit entry, found by its time.
const newDeliveriesSQL = `
	WITH m AS (
		SELECT DISTINCT merchant_id FROM webhook_endpoints WHERE deleted_at IS NULL AND disabled_at IS NULL
	),
	cand AS (
		SELECT c.id FROM charges c JOIN m ON m.merchant_id = c.merchant_id
		 WHERE c.created_at >= $1::timestamptz - $3::interval
		UNION
		SELECT k.charge_id FROM idempotency_keys k JOIN m ON m.merchant_id = k.merchant_id
		 WHERE k.charge_id IS NOT NULL AND k.locked_until >= $1
	),
	l AS (
		-- The first two parts of charge_event_log, for the candidates.
		SELECT c.merchant_id, c.id AS charge_id, 'o' AS key, c.outcome_at AS created, 'charge.' || c.outcome_status AS type
		  FROM cand JOIN charges c ON c.id = cand.id
		 WHERE c.outcome_at IS NOT NULL AND c.outcome_status IN ('succeeded', 'declined', 'failed', 'pending')
		UNION ALL
		SELECT c.merchant_id, c.id, 's', COALESCE(CASE WHEN c.outcome_status = 'declined' THEN c.outcome_at END,
		       c.finalized_at, c.updated_at), 'charge.reattempt_scheduled'
		  FROM cand JOIN charges c ON c.id = cand.id
		 WHERE c.next_reattempt_id IS NOT NULL
		UNION ALL
		SELECT v.merchant_id, v.charge_id, v.key, v.created, v.type FROM charge_event_log v
		 WHERE v.key NOT IN ('o', 's') AND v.created >= $1 AND v.created < $2
	)
	SELECT l.charge_id, l.key, l.created, l.type, l.merchant_id, w.id
	  FROM l JOIN webhook_endpoints w ON w.merchant_id = l.merchant_id AND w.deleted_at IS NULL AND w.disabled_at IS NULL
	   AND l.type = ANY (w.events) AND w.created_at <= l.created
	 WHERE l.created >= $1 AND l.created < $2
	 ORDER BY l.created, l.charge_id, l.key, w.id`

// liveEndpointsSQL says whether any merchant has a live endpoint.
const liveEndpointsSQL = `SELECT EXISTS (SELECT 1 FROM webhook_endpoints WHERE deleted_at IS NULL AND disabled_at IS NULL)`

// NewDeliveries implements events.Store. Without a live endpoint there is nothing to
// deliver, and newDeliveriesSQL is not run: PostgreSQL plans it anew at most calls (its
// time window decides the plan), which costs more than the look itself.
func (db *DB) NewDeliveries(ctx context.Context, from, to time.Time, window time.Duration) ([]events.Due, error) {
	var live bool
	if err := db.pool.QueryRow(ctx, liveEndpointsSQL).Scan(&live); err != nil {
		return nil, fmt.Errorf("store: new deliveries: %w", interpretError(err))
	}
	if !live {
		return nil, nil
	}
	rows, err := db.pool.Query(ctx, newDeliveriesSQL, from, to, window)
	if err != nil {
		return nil, fmt.Errorf("store: new deliveries: %w", interpretError(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (events.Due, error) {
		var (
			d        events.Due
			key, typ string
		)
		err := r.Scan(&d.Event.ChargeID, &key, &d.Event.Created, &typ, &d.Event.MerchantID, &d.EndpointID)
		d.Event.ID, d.Event.Type, d.Event.Created = events.ID(d.Event.ChargeID, key), events.Type(typ), d.Event.Created.UTC()
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("store: new deliveries: %w", interpretError(err))
	}
	return out, nil
}

// OldestUndelivered returns when the oldest event whose delivery job still waits or runs
// happened; zero when none does.
func (db *DB) OldestUndelivered(ctx context.Context) (time.Time, error) {
	var unix *int64
	err := db.pool.QueryRow(ctx, `SELECT min((args->>'created')::bigint) FROM river_job
		WHERE kind = 'event_delivery' AND state IN ('available', 'scheduled', 'retryable', 'running', 'pending')`).Scan(&unix)
	if err != nil {
		return time.Time{}, fmt.Errorf("store: oldest undelivered event: %w", interpretError(err))
	}
	if unix == nil {
		return time.Time{}, nil
	}
	return time.Unix(*unix, 0), nil
}
