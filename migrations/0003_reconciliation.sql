-- +goose Up

-- The reconciliation state of a charge whose outcome was unknown: when it is checked next,
-- and whether it waits for a person (the review queue).
CREATE TABLE reconciliations (
    charge_id      text PRIMARY KEY REFERENCES charges (id),
    next_check_at  timestamptz,             -- NULL: no further scheduled check
    in_review      boolean NOT NULL DEFAULT false,
    review_reason  text,
    review_rank    integer NOT NULL DEFAULT 0, -- 1: processor evidence contradicts a manual resolution
    review_since   timestamptz,
    manual_outcome text,                    -- an operator's resolution, if any
    manual_at      timestamptz,
    checks         integer NOT NULL DEFAULT 0,
    last_check_at  timestamptz,
    last_inconclusive_at timestamptz        -- the last check that found nothing conclusive
);
CREATE INDEX reconciliations_due ON reconciliations (next_check_at) WHERE next_check_at IS NOT NULL;
CREATE INDEX reconciliations_review ON reconciliations (review_rank DESC, review_since) WHERE in_review;

-- Every reconciliation check, with its decision and evidence. Append-only.
CREATE TABLE reconciliation_checks (
    charge_id text NOT NULL REFERENCES charges (id),
    n         integer NOT NULL CHECK (n > 0),
    at        timestamptz NOT NULL,
    kind      text NOT NULL,
    path      text,
    reason    text,
    body      jsonb NOT NULL,
    PRIMARY KEY (charge_id, n)
);

-- The audit trail of every state change of a charge, automatic or manual: who, when, why,
-- the evidence, and the state before and after. Append-only.
CREATE TABLE charge_events (
    id            bigserial PRIMARY KEY,
    charge_id     text NOT NULL REFERENCES charges (id),
    at            timestamptz NOT NULL DEFAULT clock_timestamp(),
    actor         text NOT NULL,
    action        text NOT NULL,
    reason        text,
    status_before text,
    status_after  text,
    note          text,
    evidence      jsonb
);
CREATE INDEX charge_events_charge ON charge_events (charge_id, id);

CREATE TRIGGER reconciliation_checks_append_only BEFORE UPDATE OR DELETE ON reconciliation_checks
    FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER reconciliation_checks_no_truncate BEFORE TRUNCATE ON reconciliation_checks
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();
CREATE TRIGGER charge_events_append_only BEFORE UPDATE OR DELETE ON charge_events
    FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER charge_events_no_truncate BEFORE TRUNCATE ON charge_events
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();

-- Only the owner could change these rows at all; the role the gateway runs as needs SELECT
-- and INSERT on them, nothing more.
REVOKE UPDATE, DELETE, TRUNCATE ON reconciliation_checks, charge_events, reattempt_decisions FROM PUBLIC;

-- +goose Down
DROP TABLE charge_events;
DROP TABLE reconciliation_checks;
DROP TABLE reconciliations;
