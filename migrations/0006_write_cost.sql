-- +goose Up

-- Fewer index entries per charge. A charge's status changes once or twice in its life, and
-- every change of an indexed column writes every index again: the full index on status
-- becomes a partial one on the charges not yet settled (what the completer, the metrics
-- and the pending list look for), and the chain is indexed only for reattempts (a chain's
-- first charge is found by its id).
DROP INDEX charges_merchant_status;
CREATE INDEX charges_unsettled ON charges (status, created_at) WHERE status IN ('processing', 'pending');
DROP INDEX charges_chain;
CREATE INDEX charges_chain_reattempts ON charges (chain, created_at) WHERE reattempt_of IS NOT NULL;

-- Room on each page for the updates that change no indexed column (a key's stored answer,
-- a card attempt's outcome), so that they are heap-only.
ALTER TABLE idempotency_keys SET (fillfactor = 70);
ALTER TABLE card_attempts SET (fillfactor = 70);

-- +goose Down
ALTER TABLE card_attempts RESET (fillfactor);
ALTER TABLE idempotency_keys RESET (fillfactor);
DROP INDEX charges_chain_reattempts;
CREATE INDEX charges_chain ON charges (chain, created_at);
DROP INDEX charges_unsettled;
CREATE INDEX charges_merchant_status ON charges (merchant_id, status, created_at DESC, id DESC);
