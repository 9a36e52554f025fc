-- +goose Up

-- One reattempt of a chain at a time may be live (migration 0012), and a reattempt is made
-- only of a declined charge. But the processor's evidence can bring a charge of the chain back
-- to life after another charge of it was paid: a success found after an operator's
-- "declined", while a reattempt had charged the order meanwhile. Two payments for one order
-- then happened, and the store must record it, not refuse it: such a charge names the live
-- charge of its chain it duplicates, and the one-live-reattempt rule holds among the others.
ALTER TABLE charges ADD COLUMN reattempt_duplicate_of text;
DROP INDEX charges_live_reattempt;
CREATE UNIQUE INDEX charges_live_reattempt ON charges (chain)
    WHERE reattempt_of IS NOT NULL AND reattempt_duplicate_of IS NULL
      AND status IN ('processing', 'pending', 'succeeded');

-- +goose Down
-- Fails while two reattempts of a chain are live (one of them a recorded duplicate): the
-- index without the exception cannot hold them.
DROP INDEX charges_live_reattempt;
CREATE UNIQUE INDEX charges_live_reattempt ON charges (chain)
    WHERE reattempt_of IS NOT NULL AND status IN ('processing', 'pending', 'succeeded');
ALTER TABLE charges DROP COLUMN reattempt_duplicate_of;
