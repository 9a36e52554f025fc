-- +goose Up

-- The block ranges of the completer's index on the key's lock are summarised by vacuum, not at
-- the first insert into the next range (autosummarize). Concurrent inserts fill pages out of
-- order (the table grows by several pages at once under contention, and each writer fills its
-- own), so a range was often summarised while writers were still filling it, or before they
-- had started, and then each key written into it updated its summary: up to two thirds of the
-- keys, about 50 bytes of WAL each and a lock on the index's page. Vacuum summarises only the
-- ranges it finds complete; the key table is vacuumed every 10 000 new keys (the default waits
-- for a fifth of the table), so that the completer's look, which reads unsummarised ranges
-- whole, still reads about one vacuum interval of keys, as it did while autosummarize's work
-- waited for the autovacuum worker.
ALTER INDEX idempotency_keys_lock_end SET (autosummarize = off);
ALTER TABLE idempotency_keys SET (autovacuum_vacuum_insert_threshold = 10000, autovacuum_vacuum_insert_scale_factor = 0);

-- +goose Down
ALTER TABLE idempotency_keys RESET (autovacuum_vacuum_insert_threshold, autovacuum_vacuum_insert_scale_factor);
ALTER INDEX idempotency_keys_lock_end SET (autosummarize = on);
