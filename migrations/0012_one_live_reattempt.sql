-- +goose Up

-- A declined charge is reattempted into one payment at most: among the reattempts of a chain,
-- one at a time may be live (processing, pending or succeeded). A second reattempt while one
-- may have charged the card — with another key, another card — would charge the order twice.
CREATE UNIQUE INDEX charges_live_reattempt ON charges (chain)
    WHERE reattempt_of IS NOT NULL AND status IN ('processing', 'pending', 'succeeded');

-- +goose Down
DROP INDEX charges_live_reattempt;
