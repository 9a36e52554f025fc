-- +goose Up

-- A new key is written once, already naming the charge the same transaction creates: the
-- reference to the charge is checked at commit, when the charge exists (or the key has been
-- released from it, when the charge was refused).
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_charge_id_fkey;
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_charge_id_fkey
    FOREIGN KEY (charge_id) REFERENCES charges (id) DEFERRABLE INITIALLY DEFERRED;

-- +goose Down
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_charge_id_fkey;
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_charge_id_fkey
    FOREIGN KEY (charge_id) REFERENCES charges (id);
