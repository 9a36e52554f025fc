-- +goose Up

-- The card a charge is made on, known from its payment method before the first attempt.
ALTER TABLE charges
    ADD COLUMN card_fingerprint text,
    ADD COLUMN card_network     text,
    ADD COLUMN card_exp_month   integer,
    ADD COLUMN card_exp_year    integer,
    ADD COLUMN chain            text; -- the root charge of a reattempt chain (its own id for an original)

-- The authorizations of each card at each processor account, as the card networks count
-- them: one row per charge (retries under one processor key are one attempt). A row is
-- written, pending, in the transaction that admits the charge, and follows its outcome.
CREATE TABLE card_attempts (
    charge_id         text PRIMARY KEY REFERENCES charges (id),
    processor_account text NOT NULL,
    fingerprint       text NOT NULL,
    network           text NOT NULL,
    merchant_id       text NOT NULL REFERENCES merchants (id),
    chain             text NOT NULL,
    at                timestamptz NOT NULL,
    outcome           text NOT NULL CHECK (outcome IN ('approved', 'declined', 'pending', 'blocked')),
    class             text,
    category          integer,
    mac               integer,
    exp_month         integer,
    exp_year          integer,
    cap_reached       boolean NOT NULL DEFAULT false
);
CREATE INDEX card_attempts_card ON card_attempts (processor_account, fingerprint, at);

-- Every reattempt decision, allowed or refused, with its rule, counters and evidence: the
-- audit report reads it. Append-only: the trigger below refuses UPDATE and DELETE.
CREATE TABLE reattempt_decisions (
    id                bigserial PRIMARY KEY,
    at                timestamptz NOT NULL DEFAULT clock_timestamp(),
    processor_account text NOT NULL,
    fingerprint       text NOT NULL,
    network           text NOT NULL,
    merchant_id       text NOT NULL,
    charge_id         text,        -- the charge admitted; NULL when refused
    chain             text,
    reattempt_of      text,
    allowed           boolean NOT NULL,
    reason            text,
    rule              text,
    not_before        timestamptz,
    remaining         integer,
    counters          jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX reattempt_decisions_card ON reattempt_decisions (processor_account, fingerprint, at);

-- +goose StatementBegin
CREATE FUNCTION refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION '% is append-only: % refused', TG_TABLE_NAME, TG_OP USING ERRCODE = 'insufficient_privilege';
END;
$$;
-- +goose StatementEnd

CREATE TRIGGER reattempt_decisions_append_only BEFORE UPDATE OR DELETE ON reattempt_decisions
    FOR EACH ROW EXECUTE FUNCTION refuse_change();
CREATE TRIGGER reattempt_decisions_no_truncate BEFORE TRUNCATE ON reattempt_decisions
    FOR EACH STATEMENT EXECUTE FUNCTION refuse_change();

-- +goose Down
DROP TABLE reattempt_decisions;
DROP FUNCTION refuse_change();
DROP TABLE card_attempts;
ALTER TABLE charges DROP COLUMN card_fingerprint, DROP COLUMN card_network, DROP COLUMN card_exp_month,
    DROP COLUMN card_exp_year, DROP COLUMN chain;
