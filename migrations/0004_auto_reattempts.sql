-- +goose Up

-- The next step of an automatic reattempt chain, persisted with the decline that calls for
-- it: the reattempt's charge id (so its processor key is fixed before anything runs) and
-- when the schedule allows it. A sweep enqueues it when due.
ALTER TABLE charges
    ADD COLUMN next_reattempt_id text,
    ADD COLUMN next_reattempt_at timestamptz;
CREATE INDEX charges_next_reattempt ON charges (next_reattempt_at) WHERE next_reattempt_at IS NOT NULL;
CREATE INDEX charges_chain ON charges (chain, created_at);

-- +goose Down
DROP INDEX charges_chain;
DROP INDEX charges_next_reattempt;
ALTER TABLE charges DROP COLUMN next_reattempt_id, DROP COLUMN next_reattempt_at;
