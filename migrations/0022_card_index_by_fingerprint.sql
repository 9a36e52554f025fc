-- +goose NO TRANSACTION
-- +goose Up

-- A card's attempts are found by its fingerprint and time alone; the processor account, which
-- every read of a card also names, is checked on the rows the index finds (a fingerprint
-- seen at two accounts is the rare case, and its rows are in the same time range). An entry
-- is 8 bytes shorter (the account's 11, less alignment), in its WAL record and its page's
-- splits. Built concurrently, so that charges are written while it builds; a build that
-- failed half way (leaving an invalid index) is dropped and made again when the migration runs
-- again.
DROP INDEX CONCURRENTLY IF EXISTS charges_card_fingerprint;
CREATE INDEX CONCURRENTLY charges_card_fingerprint ON charges (card_fingerprint, card_at)
    WHERE card_fingerprint IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS charges_card;
ALTER INDEX charges_card_fingerprint RENAME TO charges_card;

-- +goose Down
DROP INDEX CONCURRENTLY IF EXISTS charges_card_account;
CREATE INDEX CONCURRENTLY charges_card_account ON charges (processor_account, card_fingerprint, card_at)
    WHERE card_fingerprint IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS charges_card;
ALTER INDEX charges_card_account RENAME TO charges_card;
