-- +goose Up

-- The completer's look (every second) reads the keys whose lock ended since the last one: a
-- second's keys, found through the BRIN index on the lock's end, with their charges. On a key
-- table of a few hundred thousand rows the planner ran it in parallel: every look started a
-- parallel worker process (a fork and a cold catalog cache) for about 4 ms of work that one
-- backend does alone in less time than the pair. No statement on the key table reads enough
-- rows to gain from workers: the table's scans run in the backend that asks.
ALTER TABLE idempotency_keys SET (parallel_workers = 0);

-- +goose Down
ALTER TABLE idempotency_keys RESET (parallel_workers);
