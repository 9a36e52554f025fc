-- +goose Up

-- A merchant is a caller of the gateway; every row below is scoped to one.
CREATE TABLE merchants (
    id         text PRIMARY KEY CHECK (id ~ '^[A-Za-z0-9_.-]{1,64}$'),
    created_at timestamptz NOT NULL DEFAULT now()
);

-- API keys: only a SHA-256 hash of the secret is stored. A merchant may hold several live
-- keys per role so that keys rotate without downtime.
CREATE TABLE api_keys (
    id          text PRIMARY KEY,
    merchant_id text NOT NULL REFERENCES merchants (id),
    role        text NOT NULL CHECK (role IN ('checkout', 'operator', 'auditor')),
    hash        bytea NOT NULL UNIQUE CHECK (length(hash) = 32),
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);
CREATE INDEX api_keys_merchant ON api_keys (merchant_id, created_at);

-- A charge is one logical operation. Its processor idempotency key is fixed when the row is
-- written, before the first processor call, and never changes.
CREATE TABLE charges (
    id                text PRIMARY KEY,
    merchant_id       text NOT NULL REFERENCES merchants (id),
    amount            bigint NOT NULL CHECK (amount > 0),
    currency          text NOT NULL CHECK (currency ~ '^[a-z]{3}$'),
    payment_method    text NOT NULL,
    customer          text,
    reference         text,
    initiator         text NOT NULL CHECK (initiator IN ('customer', 'merchant')),
    reattempt_mode    text NOT NULL DEFAULT 'manual' CHECK (reattempt_mode IN ('manual', 'auto')),
    reattempt_of      text REFERENCES charges (id),
    metadata          jsonb NOT NULL DEFAULT '{}',
    status            text NOT NULL CHECK (status IN ('processing', 'succeeded', 'declined', 'pending', 'failed')),
    processor_key     text NOT NULL UNIQUE,
    processor_account text,
    processor_ref     text,
    failure_code      text,
    failure_retryable boolean,
    decline           jsonb,
    attempts          integer NOT NULL DEFAULT 0,
    first_sent_at     timestamptz,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    finalized_at      timestamptz
);
CREATE INDEX charges_merchant_created ON charges (merchant_id, created_at DESC, id DESC);
CREATE INDEX charges_merchant_status ON charges (merchant_id, status, created_at DESC, id DESC);
-- A reference names one live charge per merchant: a checkout that resends a charge under a
-- new idempotency key cannot charge twice.
CREATE UNIQUE INDEX charges_live_reference ON charges (merchant_id, reference)
    WHERE reference IS NOT NULL AND status IN ('processing', 'pending', 'succeeded');

-- One row per processor attempt of a charge (the attempts_detail of the API).
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

-- Inbound idempotency keys, per merchant. The fingerprint binds the key to the first
-- request's method, path and canonical body; the stored response is replayed byte for byte.
CREATE TABLE idempotency_keys (
    merchant_id     text NOT NULL REFERENCES merchants (id),
    key             text NOT NULL,
    fingerprint     bytea NOT NULL,
    charge_id       text REFERENCES charges (id),
    recovery_point  text NOT NULL DEFAULT 'started',
    locked_until    timestamptz,
    response_status integer,
    response_body   bytea,
    created_at      timestamptz NOT NULL DEFAULT now(),
    last_used_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (merchant_id, key)
);
CREATE INDEX idempotency_keys_charge ON idempotency_keys (charge_id);

-- +goose Down
DROP TABLE idempotency_keys;
DROP TABLE charge_attempts;
DROP TABLE charges;
DROP TABLE api_keys;
DROP TABLE merchants;
