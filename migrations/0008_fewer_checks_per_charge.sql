-- +goose Up

-- Fewer checks and index entries per charge.
--
-- A card attempt's merchant and an idempotency key's merchant are copies of the merchant
-- that authenticated the request, which its API key's reference guarantees and which is
-- never deleted; the charge itself keeps its checked reference to the merchant, and the
-- card attempt keeps its checked reference to the charge. Checking the copies again cost two
-- lookups of the merchant on every charge.
ALTER TABLE card_attempts DROP CONSTRAINT card_attempts_merchant_id_fkey;
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_merchant_id_fkey;

-- The audit trail is read one charge at a time, in order: one index serves that and keeps
-- each event unique, instead of two.
ALTER TABLE charge_events DROP CONSTRAINT charge_events_pkey;
DROP INDEX charge_events_charge;
ALTER TABLE charge_events ADD PRIMARY KEY (charge_id, id);

-- +goose Down
ALTER TABLE charge_events DROP CONSTRAINT charge_events_pkey;
ALTER TABLE charge_events ADD PRIMARY KEY (id);
CREATE INDEX charge_events_charge ON charge_events (charge_id, id);
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_merchant_id_fkey
    FOREIGN KEY (merchant_id) REFERENCES merchants (id);
ALTER TABLE card_attempts ADD CONSTRAINT card_attempts_merchant_id_fkey
    FOREIGN KEY (merchant_id) REFERENCES merchants (id);
