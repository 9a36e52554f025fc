-- +goose Up

-- One index entry less on every write of a charge, and on every decision.
--
-- A charge's processor key is "pg_" followed by the charge's id. The check makes that a rule
-- of the table, so the id's uniqueness makes every processor key unique: the key no longer
-- needs a unique index of its own, written on the charge's insert and again on each change
-- of its status.
ALTER TABLE charges ADD CONSTRAINT charges_processor_key_from_id CHECK (processor_key = 'pg_' || id);
ALTER TABLE charges DROP CONSTRAINT charges_processor_key_key;

-- Decisions are read per card in time order (or per merchant and period), never by their id:
-- the card's order is the primary key, the id breaking ties, instead of a key on the id beside
-- an index on the card.
ALTER TABLE reattempt_decisions DROP CONSTRAINT reattempt_decisions_pkey;
DROP INDEX reattempt_decisions_card;
ALTER TABLE reattempt_decisions ADD PRIMARY KEY (processor_account, fingerprint, at, id);

-- +goose Down
ALTER TABLE reattempt_decisions DROP CONSTRAINT reattempt_decisions_pkey;
ALTER TABLE reattempt_decisions ADD PRIMARY KEY (id);
CREATE INDEX reattempt_decisions_card ON reattempt_decisions (processor_account, fingerprint, at);
ALTER TABLE charges ADD CONSTRAINT charges_processor_key_key UNIQUE (processor_key);
ALTER TABLE charges DROP CONSTRAINT charges_processor_key_from_id;
