-- +goose Up

-- Outbound events: what a merchant's checkout hears about its charges.
--
-- An event is not a row of its own. Every change of a charge is already written, in the same
-- statement or transaction as the change: a charge's first outcome and a scheduled automatic
-- reattempt in the charge's own row (outcome_at, outcome_status, next_reattempt_id), every
-- later change as a row of charge_events (an outcome after a pending one, reconciliation's
-- resolution, a review, an operator's resolution). charge_event_log reads those as events,
-- each with an id derived from its charge and the transition (event.ID), so that an event
-- is atomic with its change and a charge writes nothing more for it.
CREATE VIEW charge_event_log AS
SELECT c.merchant_id, c.id AS charge_id, 'o' AS key, c.outcome_at AS created, 'charge.' || c.outcome_status AS type
  FROM charges c
 WHERE c.outcome_at IS NOT NULL AND c.outcome_status IN ('succeeded', 'declined', 'failed', 'pending')
UNION ALL
SELECT c.merchant_id, c.id, 's', COALESCE(CASE WHEN c.outcome_status = 'declined' THEN c.outcome_at END, c.finalized_at,
       c.updated_at), 'charge.reattempt_scheduled'
  FROM charges c
 WHERE c.next_reattempt_id IS NOT NULL
UNION ALL
SELECT c.merchant_id, e.charge_id, e.id::text, e.at,
       CASE WHEN e.action = 'manual_resolution' THEN 'charge.resolved'
            WHEN e.action = 'review' THEN 'charge.review_required'
            ELSE 'charge.' || e.status_after END
  FROM charge_events e JOIN charges c ON c.id = e.charge_id
 WHERE e.action IN ('manual_resolution', 'review')
    OR (e.action IN ('created', 'outcome', 'resolved', 'reopened')
        AND e.status_after IN ('succeeded', 'declined', 'failed', 'pending')
        AND e.status_after IS DISTINCT FROM e.status_before);

-- The dispatcher finds the events written since it last looked by their time.
CREATE INDEX charge_events_at ON charge_events (at);

-- Where the merchants' events are delivered. The signing secret is kept to sign (a
-- delivery is signed with it, and during a rotation also with the previous one until
-- previous_expires_at); it is answered once, when it is made.
CREATE TABLE webhook_endpoints (
    id                  text PRIMARY KEY,
    merchant_id         text NOT NULL,
    url                 text NOT NULL,
    events              text[] NOT NULL,
    secret              text NOT NULL,
    previous_secret     text,
    previous_expires_at timestamptz,
    created_at          timestamptz NOT NULL DEFAULT clock_timestamp(),
    -- The first failed delivery since the last one that succeeded: an endpoint failing every
    -- delivery for the disable window is disabled, with the reason.
    failing_since       timestamptz,
    disabled_at         timestamptz,
    disabled_reason     text,
    deleted_at          timestamptz
);
CREATE INDEX webhook_endpoints_merchant ON webhook_endpoints (merchant_id, created_at DESC, id DESC);

-- Every attempt to deliver an event to an endpoint: the answer's status (NULL: none came),
-- how long it took, the error, and when the next try is due.
CREATE TABLE event_deliveries (
    id            bigserial PRIMARY KEY,
    event_id      text NOT NULL,
    endpoint_id   text NOT NULL REFERENCES webhook_endpoints (id),
    attempt       integer NOT NULL,
    at            timestamptz NOT NULL DEFAULT clock_timestamp(),
    http_status   integer,
    duration_ms   bigint NOT NULL,
    error         text,
    delivered     boolean NOT NULL,
    next_retry_at timestamptz
);
CREATE INDEX event_deliveries_event ON event_deliveries (event_id, id);

-- How far the dispatcher has looked: every event before watermark less the overlap has its
-- deliveries enqueued.
CREATE TABLE event_dispatch (
    one       boolean PRIMARY KEY DEFAULT true CHECK (one),
    watermark timestamptz NOT NULL
);
INSERT INTO event_dispatch (watermark) VALUES (now());

-- +goose Down
DROP TABLE event_dispatch;
DROP TABLE event_deliveries;
DROP TABLE webhook_endpoints;
DROP INDEX charge_events_at;
DROP VIEW charge_event_log;
