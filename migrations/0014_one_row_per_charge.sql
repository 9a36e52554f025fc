-- +goose Up

-- A charge is written twice on its common path: once with its inbound key before the first
-- processor call, once with its outcome after it. Everything else a charge used to write —
-- its card attempt, its processor attempts, its stored answer, the audit events of its
-- creation and first outcome — is a column of the charge or derived from one, and the
-- outcome's update changes no indexed column, so that it is a heap-only update.
--
-- The table is rebuilt so that its columns are in the order the outcome's update needs:
-- first what a charge is (written once), then where it stands (written by its outcome),
-- with the long values last. The update's WAL record then holds only the second part.

CREATE TABLE charges_rebuilt (
    -- What the charge is: written when it is created.
    id                     text NOT NULL,
    amount                 bigint NOT NULL CHECK (amount > 0),
    created_at             timestamptz NOT NULL DEFAULT now(),
    -- When the card's history records the charge's attempt (its admission).
    card_at                timestamptz,
    card_exp_month         integer,
    card_exp_year          integer,
    merchant_id            text NOT NULL,
    currency               text NOT NULL CHECK (currency ~ '^[a-z]{3}$'),
    initiator              text NOT NULL CHECK (initiator IN ('customer', 'merchant')),
    reattempt_mode         text NOT NULL DEFAULT 'manual' CHECK (reattempt_mode IN ('manual', 'auto')),
    processor_account      text,
    card_fingerprint       text,
    card_network           text,
    chain                  text, -- the root charge of a reattempt chain; NULL for an original
    reattempt_of           text,
    reference              text,
    customer               text,
    -- The inbound key that created the charge.
    idempotency_key        text,
    payment_method         text NOT NULL,
    metadata               jsonb NOT NULL DEFAULT '{}',
    next_reattempt_id      text,
    next_reattempt_at      timestamptz,
    reference_duplicate_of text,
    reattempt_duplicate_of text,
    -- Where it stands: written by its outcome.
    attempts               integer NOT NULL DEFAULT 0,
    -- The stored answer of the inbound key (a 202 is stored without a body: its replay
    -- renders the charge's current state).
    response_status        integer,
    first_sent_at          timestamptz,
    updated_at             timestamptz NOT NULL DEFAULT now(),
    finalized_at           timestamptz,
    -- The first outcome of the charge's own run, as its audit trail shows it (charge_trail).
    outcome_at             timestamptz,
    -- The card attempt the network rules count. card_outcome NULL: the charge made no
    -- authorization attempt (it failed before any could reach the card network, or waited
    -- for the cardholder's authentication).
    card_settled_at        timestamptz,
    card_category          integer,
    card_mac               integer,
    card_cap_reached       boolean NOT NULL DEFAULT false,
    failure_retryable      boolean,
    -- Whether the charge holds its reference and its place in its reattempt chain. The
    -- uniqueness of live references and live reattempts is on it, not on the status, so that
    -- a change of status that keeps a charge live (processing → succeeded) rewrites no index.
    live                   boolean GENERATED ALWAYS AS (status IN ('processing', 'pending', 'succeeded')) STORED,
    status                 text NOT NULL CHECK (status IN ('processing', 'succeeded', 'declined', 'pending', 'failed')),
    card_outcome           text CHECK (card_outcome IN ('approved', 'declined', 'pending', 'blocked')),
    card_class             text,
    -- What a refusal forbids beyond its class (decline.Hold): read with the charge's payment
    -- method and currency.
    card_hold              text,
    processor_ref          text,
    failure_code           text,
    decline                jsonb,
    outcome_status         text,
    outcome_reason         text,
    -- The processor attempts of the retry loop, oldest first (attempts_detail), as JSON text:
    -- one array per attempt, [n, started_at in Unix microseconds, duration_ms, timeout_ms,
    -- class, http_status, processor_code, request_id, retry_after_ms, backoff_ms,
    -- budget_tokens_before, budget_tokens_after].
    attempt_log            text,
    response_body          bytea
) WITH (fillfactor = 50); -- room on each page for the outcome, which about doubles a row

INSERT INTO charges_rebuilt (id, amount, created_at, card_at, card_exp_month, card_exp_year, merchant_id, currency,
    initiator, reattempt_mode, processor_account, card_fingerprint, card_network, chain, reattempt_of, reference,
    customer, idempotency_key, payment_method, metadata, next_reattempt_id, next_reattempt_at, reference_duplicate_of,
    reattempt_duplicate_of, attempts, response_status, first_sent_at, updated_at, finalized_at, card_settled_at,
    card_category, card_mac, card_cap_reached, failure_retryable, status, card_outcome, card_class, processor_ref,
    failure_code, decline, attempt_log, response_body)
SELECT c.id, c.amount, c.created_at, a.at, c.card_exp_month, c.card_exp_year, c.merchant_id, c.currency, c.initiator,
       c.reattempt_mode, COALESCE(a.processor_account, c.processor_account), COALESCE(a.fingerprint, c.card_fingerprint),
       c.card_network, NULLIF(c.chain, c.id), c.reattempt_of, c.reference, c.customer, k.key, c.payment_method, c.metadata,
       c.next_reattempt_id, c.next_reattempt_at, c.reference_duplicate_of, c.reattempt_duplicate_of, c.attempts,
       k.response_status, c.first_sent_at, c.updated_at, c.finalized_at, a.settled_at, a.category, a.mac,
       COALESCE(a.cap_reached, false), c.failure_retryable, c.status, a.outcome, a.class, c.processor_ref, c.failure_code,
       c.decline, l.log, k.response_body
  FROM charges c
  LEFT JOIN card_attempts a ON a.charge_id = c.id
  LEFT JOIN (SELECT charge_id, '[' || string_agg(json_build_array(n, (extract(epoch FROM started_at) * 1000000)::bigint,
                 duration_ms, timeout_ms, class, COALESCE(http_status, 0), COALESCE(processor_code, ''),
                 COALESCE(request_id, ''), COALESCE(retry_after_ms, 0), COALESCE(backoff_ms, 0),
                 COALESCE(budget_tokens_before, 0), COALESCE(budget_tokens_after, 0))::text, ',' ORDER BY n) || ']' AS log
               FROM charge_attempts GROUP BY charge_id) l ON l.charge_id = c.id
  LEFT JOIN (SELECT DISTINCT ON (charge_id) charge_id, key, response_status, response_body FROM idempotency_keys
              WHERE charge_id IS NOT NULL ORDER BY charge_id, created_at) k ON k.charge_id = c.id;

-- The cards with a refusal on record (see card_states below), read before their tables go.
CREATE TEMPORARY TABLE cards_on_record AS
SELECT DISTINCT processor_account, fingerprint FROM card_attempts WHERE outcome IN ('declined', 'blocked');

-- The processor key is "pg_" and the charge's id (charge.ProcessorKey): derived, not stored.
-- A merchant is never deleted and every charge's merchant is its API key's, whose reference
-- is checked: checking the charge's copy again locked the merchant's row on every charge. A
-- reattempt names the declined charge it was made of, which its request read.
DROP TABLE card_attempts;
DROP TABLE charge_attempts;
DROP TABLE charges CASCADE;
ALTER TABLE charges_rebuilt RENAME TO charges;
ALTER TABLE charges ADD CONSTRAINT charges_pkey PRIMARY KEY (id);
CREATE INDEX charges_merchant_created ON charges (merchant_id, created_at DESC, id DESC);
-- A card's attempts at a processor account, in time order.
CREATE INDEX charges_card ON charges (processor_account, card_fingerprint, card_at) WHERE card_fingerprint IS NOT NULL;
CREATE INDEX charges_chain_reattempts ON charges (chain, created_at) WHERE reattempt_of IS NOT NULL;
CREATE INDEX charges_next_reattempt ON charges (next_reattempt_at) WHERE next_reattempt_at IS NOT NULL;
CREATE UNIQUE INDEX charges_live_reference ON charges (merchant_id, reference)
    WHERE reference IS NOT NULL AND reference_duplicate_of IS NULL AND live;
CREATE UNIQUE INDEX charges_live_reattempt ON charges (chain)
    WHERE reattempt_of IS NOT NULL AND reattempt_duplicate_of IS NULL AND live;
-- The tables that name a charge keep their checked reference to it.
ALTER TABLE charge_events ADD CONSTRAINT charge_events_charge_id_fkey FOREIGN KEY (charge_id) REFERENCES charges (id);
ALTER TABLE reconciliation_checks ADD CONSTRAINT reconciliation_checks_charge_id_fkey
    FOREIGN KEY (charge_id) REFERENCES charges (id);
ALTER TABLE reconciliations ADD CONSTRAINT reconciliations_charge_id_fkey FOREIGN KEY (charge_id) REFERENCES charges (id);

-- An inbound key is written once, with its charge, and not changed on the common path: a
-- request holds it while its lock runs and its charge is processing. Its answer is the
-- charge's. The completer finds the keys whose lock ran out by the lock's end.
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
SELECT processor_account, fingerprint, '0001-01-01 00:00:00+00'::timestamptz FROM cards_on_record;
DROP TABLE cards_on_record;

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
  FROM charges c, jsonb_array_elements(c.attempt_log::jsonb) e;

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
ALTER TABLE idempotency_keys SET (fillfactor = 70);
CREATE INDEX idempotency_keys_charge ON idempotency_keys (charge_id);
CREATE TABLE charges_rebuilt (
    id                text PRIMARY KEY,
    merchant_id       text NOT NULL,
    amount            bigint NOT NULL CHECK (amount > 0),
    currency          text NOT NULL CHECK (currency ~ '^[a-z]{3}$'),
    payment_method    text NOT NULL,
    customer          text,
    reference         text,
    initiator         text NOT NULL CHECK (initiator IN ('customer', 'merchant')),
    reattempt_mode    text NOT NULL DEFAULT 'manual' CHECK (reattempt_mode IN ('manual', 'auto')),
    reattempt_of      text,
    metadata          jsonb NOT NULL DEFAULT '{}',
    status            text NOT NULL CHECK (status IN ('processing', 'succeeded', 'declined', 'pending', 'failed')),
    processor_key     text NOT NULL CHECK (processor_key = 'pg_' || id),
    processor_account text,
    processor_ref     text,
    failure_code      text,
    failure_retryable boolean,
    decline           jsonb,
    attempts          integer NOT NULL DEFAULT 0,
    first_sent_at     timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    finalized_at      timestamptz,
    card_fingerprint  text,
    card_network      text,
    card_exp_month    integer,
    card_exp_year     integer,
    chain             text,
    next_reattempt_id text,
    next_reattempt_at timestamptz,
    reference_duplicate_of text,
    reattempt_duplicate_of text
);
INSERT INTO charges_rebuilt SELECT id, merchant_id, amount, currency, payment_method, customer, reference, initiator,
    reattempt_mode, reattempt_of, metadata, status, 'pg_' || id, processor_account, processor_ref, failure_code,
    failure_retryable, decline, attempts, first_sent_at, created_at, updated_at, finalized_at, card_fingerprint,
    card_network, card_exp_month, card_exp_year, COALESCE(chain, id), next_reattempt_id, next_reattempt_at,
    reference_duplicate_of, reattempt_duplicate_of FROM charges;
CREATE TABLE charge_attempts (
    charge_id            text NOT NULL REFERENCES charges_rebuilt (id),
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
  FROM charges c, jsonb_array_elements(c.attempt_log::jsonb) e;
CREATE TABLE card_attempts (
    charge_id         text PRIMARY KEY REFERENCES charges_rebuilt (id),
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
UPDATE idempotency_keys k SET response_status = c.response_status, response_body = c.response_body
  FROM charges c WHERE c.id = k.charge_id AND k.response_status IS NULL;
DROP TABLE charges CASCADE;
ALTER TABLE charges_rebuilt RENAME TO charges;
ALTER INDEX charges_rebuilt_pkey RENAME TO charges_pkey;
ALTER TABLE charges ADD CONSTRAINT charges_merchant_id_fkey FOREIGN KEY (merchant_id) REFERENCES merchants (id),
    ADD CONSTRAINT charges_reattempt_of_fkey FOREIGN KEY (reattempt_of) REFERENCES charges (id);
CREATE INDEX charges_merchant_created ON charges (merchant_id, created_at DESC, id DESC);
CREATE INDEX charges_unsettled ON charges (status, created_at) WHERE status IN ('processing', 'pending');
CREATE INDEX charges_chain_reattempts ON charges (chain, created_at) WHERE reattempt_of IS NOT NULL;
CREATE INDEX charges_next_reattempt ON charges (next_reattempt_at) WHERE next_reattempt_at IS NOT NULL;
CREATE UNIQUE INDEX charges_live_reference ON charges (merchant_id, reference)
    WHERE reference IS NOT NULL AND reference_duplicate_of IS NULL AND status IN ('processing', 'pending', 'succeeded');
CREATE UNIQUE INDEX charges_live_reattempt ON charges (chain)
    WHERE reattempt_of IS NOT NULL AND reattempt_duplicate_of IS NULL AND status IN ('processing', 'pending', 'succeeded');
CREATE INDEX card_attempts_card ON card_attempts (processor_account, fingerprint, at);
CREATE INDEX card_attempts_merchant_at ON card_attempts (merchant_id, at);
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_charge_id_fkey
    FOREIGN KEY (charge_id) REFERENCES charges (id) DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE charge_events ADD CONSTRAINT charge_events_charge_id_fkey FOREIGN KEY (charge_id) REFERENCES charges (id);
ALTER TABLE reconciliation_checks ADD CONSTRAINT reconciliation_checks_charge_id_fkey
    FOREIGN KEY (charge_id) REFERENCES charges (id);
ALTER TABLE reconciliations ADD CONSTRAINT reconciliations_charge_id_fkey FOREIGN KEY (charge_id) REFERENCES charges (id);
