-- +goose Up

-- A charge's columns are checked by their types, not by constraints of the table.
--
-- PostgreSQL reads a table's CHECK constraints and its stored generated columns from the
-- catalog and plans them again for every statement that writes a row, and checks every
-- constraint on every update: about a tenth of the database's work on a charge. A domain's
-- constraint is planned once per connection, and checked only for the columns a statement
-- assigns (the outcome's update assigns status and the card attempt's outcome, nothing else).
--
-- live (whether the charge holds its reference and its place in its reattempt chain) is
-- written by each statement that sets a status, from the status it sets, instead of being
-- generated; the test databases (internal/dbtest) fail a package whose statements leave a
-- charge's live at odds with its status. It stays a column of its own so that a change of status that keeps a charge live rewrites no index.
--
-- Each domain gets its constraint after its column has its type, so that the table is only
-- read to check the rows it has, not rewritten.

DROP VIEW card_attempts;
DROP INDEX charges_live_reference, charges_live_reattempt;
ALTER TABLE charges DROP COLUMN live;

CREATE DOMAIN charge_amount AS bigint;
CREATE DOMAIN currency_code AS text;
CREATE DOMAIN charge_initiator AS text;
CREATE DOMAIN charge_reattempt_mode AS text;
CREATE DOMAIN charge_status AS text;
CREATE DOMAIN card_attempt_outcome AS text;

ALTER TABLE charges
    DROP CONSTRAINT charges_rebuilt_amount_check,
    DROP CONSTRAINT charges_rebuilt_currency_check,
    DROP CONSTRAINT charges_rebuilt_initiator_check,
    DROP CONSTRAINT charges_rebuilt_reattempt_mode_check,
    DROP CONSTRAINT charges_rebuilt_status_check,
    DROP CONSTRAINT charges_rebuilt_card_outcome_check,
    ALTER COLUMN amount TYPE charge_amount,
    ALTER COLUMN currency TYPE currency_code,
    ALTER COLUMN initiator TYPE charge_initiator,
    ALTER COLUMN reattempt_mode TYPE charge_reattempt_mode,
    ALTER COLUMN status TYPE charge_status,
    ALTER COLUMN card_outcome TYPE card_attempt_outcome;

ALTER DOMAIN charge_amount ADD CONSTRAINT charge_amount_check CHECK (VALUE > 0);
ALTER DOMAIN currency_code ADD CONSTRAINT currency_code_check CHECK (VALUE ~ '^[a-z]{3}$');
ALTER DOMAIN charge_initiator ADD CONSTRAINT charge_initiator_check CHECK (VALUE IN ('customer', 'merchant'));
ALTER DOMAIN charge_reattempt_mode ADD CONSTRAINT charge_reattempt_mode_check CHECK (VALUE IN ('manual', 'auto'));
ALTER DOMAIN charge_status ADD CONSTRAINT charge_status_check
    CHECK (VALUE IN ('processing', 'succeeded', 'declined', 'pending', 'failed'));
ALTER DOMAIN card_attempt_outcome ADD CONSTRAINT card_attempt_outcome_check
    CHECK (VALUE IN ('approved', 'declined', 'pending', 'blocked'));

-- The default fills the rows there are without rewriting them; the charges that are not live
-- are then written once. A new row must say whether it is live: there is no default.
ALTER TABLE charges ADD COLUMN live boolean NOT NULL DEFAULT true;
UPDATE charges SET live = false WHERE status NOT IN ('processing', 'pending', 'succeeded');
ALTER TABLE charges ALTER COLUMN live DROP DEFAULT;

CREATE UNIQUE INDEX charges_live_reference ON charges (merchant_id, reference)
    WHERE reference IS NOT NULL AND reference_duplicate_of IS NULL AND live;
CREATE UNIQUE INDEX charges_live_reattempt ON charges (chain)
    WHERE reattempt_of IS NOT NULL AND reattempt_duplicate_of IS NULL AND live;

CREATE VIEW card_attempts AS
SELECT id AS charge_id, processor_account, card_fingerprint AS fingerprint, card_network AS network, merchant_id,
       COALESCE(chain, id) AS chain, card_at AS at, card_outcome AS outcome, card_class AS class,
       card_category AS category, card_mac AS mac, card_exp_month AS exp_month, card_exp_year AS exp_year,
       card_cap_reached AS cap_reached, card_settled_at AS settled_at, card_hold AS hold, payment_method, currency
  FROM charges WHERE card_outcome IS NOT NULL;

-- +goose Down
DROP VIEW card_attempts;
DROP INDEX charges_live_reference, charges_live_reattempt;
ALTER TABLE charges DROP COLUMN live;
ALTER TABLE charges
    ALTER COLUMN amount TYPE bigint,
    ALTER COLUMN currency TYPE text,
    ALTER COLUMN initiator TYPE text,
    ALTER COLUMN reattempt_mode TYPE text,
    ALTER COLUMN status TYPE text,
    ALTER COLUMN card_outcome TYPE text,
    ADD CONSTRAINT charges_rebuilt_amount_check CHECK (amount > 0),
    ADD CONSTRAINT charges_rebuilt_currency_check CHECK (currency ~ '^[a-z]{3}$'),
    ADD CONSTRAINT charges_rebuilt_initiator_check CHECK (initiator IN ('customer', 'merchant')),
    ADD CONSTRAINT charges_rebuilt_reattempt_mode_check CHECK (reattempt_mode IN ('manual', 'auto')),
    ADD CONSTRAINT charges_rebuilt_status_check
        CHECK (status IN ('processing', 'succeeded', 'declined', 'pending', 'failed')),
    ADD CONSTRAINT charges_rebuilt_card_outcome_check CHECK (card_outcome IN ('approved', 'declined', 'pending', 'blocked'));
DROP DOMAIN charge_amount, currency_code, charge_initiator, charge_reattempt_mode, charge_status, card_attempt_outcome;
ALTER TABLE charges ADD COLUMN live boolean GENERATED ALWAYS AS (status IN ('processing', 'pending', 'succeeded')) STORED;
CREATE UNIQUE INDEX charges_live_reference ON charges (merchant_id, reference)
    WHERE reference IS NOT NULL AND reference_duplicate_of IS NULL AND live;
CREATE UNIQUE INDEX charges_live_reattempt ON charges (chain)
    WHERE reattempt_of IS NOT NULL AND reattempt_duplicate_of IS NULL AND live;
CREATE VIEW card_attempts AS
SELECT id AS charge_id, processor_account, card_fingerprint AS fingerprint, card_network AS network, merchant_id,
       COALESCE(chain, id) AS chain, card_at AS at, card_outcome AS outcome, card_class AS class,
       card_category AS category, card_mac AS mac, card_exp_month AS exp_month, card_exp_year AS exp_year,
       card_cap_reached AS cap_reached, card_settled_at AS settled_at, card_hold AS hold, payment_method, currency
  FROM charges WHERE card_outcome IS NOT NULL;
