-- +goose Up

-- A charge is written twice on its common path: once with its inbound key before the first
-- processor call, once with its outcome after it. Everything else a charge used to write —
-- its card attempt, its processor attempts, its stored answer, its audit events for its
-- creation and first outcome — is a column of the charge or derived from one, and the outcome's
-- update changes no indexed column, so that it is a heap-only update.

-- The card attempt the network rules count: the charge's own card, where the charge was sent.
-- card_outcome NULL: the charge made no authorization attempt (failed before any could reach
-- the card network, or waited for the cardholder's authentication).
ALTER TABLE charges
    ADD COLUMN card_at          timestamptz,
    ADD COLUMN card_outcome     text CHECK (card_outcome IN ('approved', 'declined', 'pending', 'blocked')),
    ADD COLUMN card_class       text,
    ADD COLUMN card_category    integer,
    ADD COLUMN card_mac         integer,
    ADD COLUMN card_cap_reached boolean NOT NULL DEFAULT false,
    ADD COLUMN card_settled_at  timestamptz,
    -- What a refusal forbids beyond its class (decline.Hold): read with the charge's
    -- payment method and currency.
    ADD COLUMN card_hold        text,
    -- The processor attempts of the retry loop, oldest first (attempts_detail): one JSON array
    -- per attempt, [n, started_at in Unix microseconds, duration_ms, timeout_ms, class,
    -- http_status, processor_code, request_id, retry_after_ms, backoff_ms, budget_tokens_before,
    -- budget_tokens_after].
    ADD COLUMN attempt_log      jsonb,
    -- The inbound key that created the charge, and its stored answer (a 202 is stored without
    -- a body: its replay renders the charge's current state).
    ADD COLUMN idempotency_key  text,
    ADD COLUMN response_status  integer,
    ADD COLUMN response_body    bytea,
    -- The first outcome of the charge's own run, as its audit trail shows it (charge_trail).
    ADD COLUMN outcome_at       timestamptz,
    ADD COLUMN outcome_status   text,
    ADD COLUMN outcome_reason   text,
    -- Whether the charge holds its reference and its place in its reattempt chain. The
    -- uniqueness of live references and live reattempts is on it, not on the status, so that a
    -- change of status that keeps a charge live (processing → succeeded) rewrites no index.
    ADD COLUMN live boolean GENERATED ALWAYS AS (status IN ('processing', 'pending', 'succeeded')) STORED;

UPDATE charges c SET card_at = a.at, card_outcome = a.outcome, card_class = a.class, card_category = a.category,
        card_mac = a.mac, card_cap_reached = a.cap_reached, card_settled_at = a.settled_at,
        processor_account = a.processor_account, card_fingerprint = a.fingerprint
  FROM card_attempts a WHERE a.charge_id = c.id;
UPDATE charges c SET attempt_log = l.log
  FROM (SELECT charge_id, jsonb_agg(jsonb_build_array(n, (extract(epoch FROM started_at) * 1000000)::bigint, duration_ms,
            timeout_ms, class, COALESCE(http_status, 0), COALESCE(processor_code, ''), COALESCE(request_id, ''),
            COALESCE(retry_after_ms, 0), COALESCE(backoff_ms, 0), COALESCE(budget_tokens_before, 0),
            COALESCE(budget_tokens_after, 0)) ORDER BY n) AS log
          FROM charge_attempts GROUP BY charge_id) l
 WHERE l.charge_id = c.id;
UPDATE charges c SET idempotency_key = k.key, response_status = k.response_status, response_body = k.response_body
  FROM (SELECT DISTINCT ON (charge_id) charge_id, key, response_status, response_body FROM idempotency_keys
         WHERE charge_id IS NOT NULL ORDER BY charge_id, created_at) k
 WHERE k.charge_id = c.id;

DROP TABLE card_attempts;
DROP TABLE charge_attempts;

-- The processor key is "pg_" and the charge's id (charge.ProcessorKey): derived, not stored.
ALTER TABLE charges DROP COLUMN processor_key;

-- A merchant is never deleted and every charge's merchant is its API key's, whose reference
-- is checked: checking the charge's copy again locked the merchant's row on every charge.
ALTER TABLE charges DROP CONSTRAINT charges_merchant_id_fkey;

DROP INDEX charges_unsettled;
DROP INDEX charges_live_reference;
CREATE UNIQUE INDEX charges_live_reference ON charges (merchant_id, reference)
    WHERE reference IS NOT NULL AND reference_duplicate_of IS NULL AND live;
DROP INDEX charges_live_reattempt;
CREATE UNIQUE INDEX charges_live_reattempt ON charges (chain)
    WHERE reattempt_of IS NOT NULL AND reattempt_duplicate_of IS NULL AND live;
-- A card's attempts at a processor account, in time order.
CREATE INDEX charges_card ON charges (processor_account, card_fingerprint, card_at) WHERE card_fingerprint IS NOT NULL;
-- Room on each page for a charge's outcome, which makes its row about twice as long (the
-- stored answer, the attempts): the update stays on the page, heap-only.
ALTER TABLE charges SET (fillfactor = 50);

-- An inbound key is written once, with its charge, and not changed on the common path: a
-- request holds it while its lock runs and its charge is processing. Its answer is the
-- charge's. The completer finds the keys whose lock ran out by the lock's end.
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_charge_id_fkey;
DROP INDEX idempotency_keys_charge;
ALTER TABLE idempotency_keys DROP COLUMN recovery_point, DROP COLUMN response_status, DROP COLUMN response_body,
    DROP COLUMN last_used_at;
ALTER TABLE idempotency_keys RESET (fillfactor);
CREATE INDEX idempotency_keys_lock_end ON idempotency_keys (locked_until) WHERE charge_id IS NOT NULL;

-- How far the completer has looked: every key whose lock ended before watermark was seen
-- with its charge settled, or was claimed (which moves its lock's end past the watermark).
CREATE TABLE completer_watermark (
    one       boolean PRIMARY KEY DEFAULT true CHECK (one),
    watermark timestamptz NOT NULL
);
INSERT INTO completer_watermark (watermark) VALUES (now() - interval '25 hours');

-- The network rules' state of a card at a processor account, for cards with a decline or a
-- processor block on record: a card without a row has only approvals and unknown outcomes,
-- on which the rules refuse nothing. compact is the part of the card's attempts up to
-- (through_at, through_charge) that the rules can still need (decline.Compact); the attempts
-- after it are read from charges. stale: an attempt up to that point changed since, and the
-- next decision reads the card's whole history again. version counts the writes, so that a
-- decision writes the state it read only if nothing changed it meanwhile.
CREATE TABLE card_states (
    processor_account text NOT NULL,
    fingerprint       text NOT NULL,
    compact           jsonb NOT NULL DEFAULT '[]',
    through_at        timestamptz NOT NULL,
    through_charge    text NOT NULL DEFAULT '',
    stale             boolean NOT NULL DEFAULT true,
    version           bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (processor_account, fingerprint)
);
INSERT INTO card_states (processor_account, fingerprint, through_at)
SELECT DISTINCT processor_account, card_fingerprint, '0001-01-01 00:00:00+00'::timestamptz FROM charges
 WHERE card_outcome IN ('declined', 'blocked') AND processor_account IS NOT NULL;

-- The views keep the names the network rules' history and the attempts had.
CREATE VIEW card_attempts AS
SELECT id AS charge_id, processor_account, card_fingerprint AS fingerprint, card_network AS network, merchant_id,
       COALESCE(chain, id) AS chain, card_at AS at, card_outcome AS outcome, card_class AS class,
       card_category AS category, card_mac AS mac, card_exp_month AS exp_month, card_exp_year AS exp_year,
       card_cap_reached AS cap_reached, card_settled_at AS settled_at, card_hold AS hold, payment_method, currency
  FROM charges WHERE card_outcome IS NOT NULL;

CREATE VIEW charge_attempts AS
SELECT c.id AS charge_id, (e->>0)::int AS n, to_timestamp((e->>1)::bigint / 1e6) AS started_at,
       (e->>2)::bigint AS duration_ms, (e->>3)::bigint AS timeout_ms, e->>4 AS class,
       NULLIF((e->>5)::int, 0) AS http_status, NULLIF(e->>6, '') AS processor_code, NULLIF(e->>7, '') AS request_id,
       (e->>8)::bigint AS retry_after_ms, (e->>9)::bigint AS backoff_ms,
       (e->>10)::float8 AS budget_tokens_before, (e->>11)::float8 AS budget_tokens_after
  FROM charges c, jsonb_array_elements(c.attempt_log) e;

-- The audit trail of every charge: the events written as rows, and the two every charge's own
-- run makes, derived from its row: its creation, and its first outcome.
CREATE VIEW charge_trail AS
SELECT charge_id, id AS seq, at, actor, action, reason, status_before, status_after, note, evidence FROM charge_events
UNION ALL
SELECT c.id, 0, c.created_at, 'gateway', 'created', NULL, NULL, 'processing', NULL, NULL FROM charges c
 WHERE NOT EXISTS (SELECT 1 FROM charge_events e WHERE e.charge_id = c.id AND e.action = 'created')
UNION ALL
SELECT c.id, 0, c.outcome_at, 'gateway', 'outcome', c.outcome_reason, 'processing', c.outcome_status, NULL, NULL
  FROM charges c WHERE c.outcome_at IS NOT NULL;

-- +goose Down
DROP VIEW charge_trail;
DROP VIEW charge_attempts;
DROP VIEW card_attempts;
DROP TABLE card_states;
DROP TABLE completer_watermark;
DROP INDEX idempotency_keys_lock_end;
ALTER TABLE idempotency_keys ADD COLUMN recovery_point text NOT NULL DEFAULT 'started',
    ADD COLUMN response_status integer, ADD COLUMN response_body bytea,
    ADD COLUMN last_used_at timestamptz NOT NULL DEFAULT now();
UPDATE idempotency_keys k SET response_status = c.response_status, response_body = c.response_body,
        recovery_point = CASE WHEN c.response_status IS NOT NULL THEN 'finished' ELSE 'created' END
  FROM charges c WHERE c.id = k.charge_id;
CREATE INDEX idempotency_keys_charge ON idempotency_keys (charge_id);
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_charge_id_fkey
    FOREIGN KEY (charge_id) REFERENCES charges (id) DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE charges ADD CONSTRAINT charges_merchant_id_fkey FOREIGN KEY (merchant_id) REFERENCES merchants (id);
ALTER TABLE charges ADD COLUMN processor_key text;
UPDATE charges SET processor_key = 'pg_' || id;
ALTER TABLE charges ALTER COLUMN processor_key SET NOT NULL,
    ADD CONSTRAINT charges_processor_key_from_id CHECK (processor_key = 'pg_' || id);
CREATE TABLE charge_attempts (
    charge_id            text NOT NULL REFERENCES charges (id),
    n                    integer NOT NULL CHECK (n > 0),
    started_at           timestamptz NOT NULL,
    duration_ms          bigint NOT NULL,
    timeout_ms           bigint NOT NULL,
    class                text NOT NULL,
    http_status          integer,
    processor_code       text,
    request_id           text,
    retry_after_ms       bigint,
    backoff_ms           bigint,
    budget_tokens_before double precision,
    budget_tokens_after  double precision,
    PRIMARY KEY (charge_id, n)
);
INSERT INTO charge_attempts
SELECT c.id, (e->>0)::int, to_timestamp((e->>1)::bigint / 1e6), (e->>2)::bigint, (e->>3)::bigint, e->>4,
       NULLIF((e->>5)::int, 0), NULLIF(e->>6, ''), NULLIF(e->>7, ''), (e->>8)::bigint, (e->>9)::bigint,
       (e->>10)::float8, (e->>11)::float8
  FROM charges c, jsonb_array_elements(c.attempt_log) e;
CREATE TABLE card_attempts (
    charge_id         text PRIMARY KEY REFERENCES charges (id),
    processor_account text NOT NULL,
    fingerprint       text NOT NULL,
    network           text NOT NULL,
    merchant_id       text NOT NULL,
    chain             text NOT NULL,
    at                timestamptz NOT NULL,
    outcome           text NOT NULL CHECK (outcome IN ('approved', 'declined', 'pending', 'blocked')),
    class             text,
    category          integer,
    mac               integer,
    exp_month         integer,
    exp_year          integer,
    cap_reached       boolean NOT NULL DEFAULT false,
    settled_at        timestamptz
) WITH (fillfactor = 70);
INSERT INTO card_attempts
SELECT id, processor_account, card_fingerprint, COALESCE(card_network, ''), merchant_id, COALESCE(chain, id), card_at,
       card_outcome, card_class, card_category, card_mac, card_exp_month, card_exp_year, card_cap_reached, card_settled_at
  FROM charges WHERE card_outcome IS NOT NULL;
CREATE INDEX card_attempts_card ON card_attempts (processor_account, fingerprint, at);
CREATE INDEX card_attempts_merchant_at ON card_attempts (merchant_id, at);
DROP INDEX charges_card;
DROP INDEX charges_live_reattempt;
CREATE UNIQUE INDEX charges_live_reattempt ON charges (chain)
    WHERE reattempt_of IS NOT NULL AND reattempt_duplicate_of IS NULL AND status IN ('processing', 'pending', 'succeeded');
DROP INDEX charges_live_reference;
CREATE UNIQUE INDEX charges_live_reference ON charges (merchant_id, reference)
    WHERE reference IS NOT NULL AND reference_duplicate_of IS NULL AND status IN ('processing', 'pending', 'succeeded');
CREATE INDEX charges_unsettled ON charges (status, created_at) WHERE status IN ('processing', 'pending');
ALTER TABLE charges RESET (fillfactor);
ALTER TABLE charges DROP COLUMN live, DROP COLUMN outcome_reason, DROP COLUMN outcome_status, DROP COLUMN outcome_at,
    DROP COLUMN response_body, DROP COLUMN response_status, DROP COLUMN idempotency_key, DROP COLUMN attempt_log,
    DROP COLUMN card_hold, DROP COLUMN card_settled_at, DROP COLUMN card_cap_reached, DROP COLUMN card_mac, DROP COLUMN card_category,
    DROP COLUMN card_class, DROP COLUMN card_outcome, DROP COLUMN card_at;
