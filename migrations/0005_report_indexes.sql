-- +goose Up

-- The reattempt report picks the cards a merchant touched in a period.
CREATE INDEX card_attempts_merchant_at ON card_attempts (merchant_id, at);
CREATE INDEX reattempt_decisions_merchant_at ON reattempt_decisions (merchant_id, at);

-- +goose Down
DROP INDEX reattempt_decisions_merchant_at;
DROP INDEX card_attempts_merchant_at;
