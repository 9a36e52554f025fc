-- +goose NO TRANSACTION
-- +goose Up

-- The merchant's charge list is read newest first by a backward scan of an ascending index.
-- A new charge's entry then goes after the merchant's last one and next to it in the heap, so
-- that a full leaf page splits where the new entry goes and keeps the old entries packed (the
-- B-tree's localized monotonic insertion rule). The descending index put each new entry first,
-- split its leaf in halves and left every page half full: twice the splits and their WAL.
-- Built concurrently, so that charges are written while it builds.
CREATE INDEX CONCURRENTLY IF NOT EXISTS charges_merchant_created_asc ON charges (merchant_id, created_at, id);
DROP INDEX CONCURRENTLY IF EXISTS charges_merchant_created;
ALTER INDEX charges_merchant_created_asc RENAME TO charges_merchant_created;

-- +goose Down
CREATE INDEX CONCURRENTLY IF NOT EXISTS charges_merchant_created_desc ON charges (merchant_id, created_at DESC, id DESC);
DROP INDEX CONCURRENTLY IF EXISTS charges_merchant_created;
ALTER INDEX charges_merchant_created_desc RENAME TO charges_merchant_created;
