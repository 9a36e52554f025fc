-- +goose Up

-- A reference names one live charge per merchant, and a new charge that would take a live
-- reference is refused. But the processor's evidence can bring a charge back to life after
-- another charge took its reference: a success found after an operator's "failed", while the
-- checkout had charged the order again. Two payments for one order then happened, and the
-- store must record it, not refuse it: such a charge keeps its reference, names the live
-- charge it duplicates, and the uniqueness holds among the others.
ALTER TABLE charges ADD COLUMN reference_duplicate_of text;
DROP INDEX charges_live_reference;
CREATE UNIQUE INDEX charges_live_reference ON charges (merchant_id, reference)
    WHERE reference IS NOT NULL AND reference_duplicate_of IS NULL
      AND status IN ('processing', 'pending', 'succeeded');

-- +goose Down
DROP INDEX charges_live_reference;
CREATE UNIQUE INDEX charges_live_reference ON charges (merchant_id, reference)
    WHERE reference IS NOT NULL AND status IN ('processing', 'pending', 'succeeded');
ALTER TABLE charges DROP COLUMN reference_duplicate_of;
