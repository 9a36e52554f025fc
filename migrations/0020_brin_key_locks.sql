-- +goose Up

-- The completer finds the keys whose lock ended since it last looked (completer_watermark)
-- by a block-range index on the lock's end instead of a B-tree. A key's lock ends a fixed
-- time after it is written, so the table's blocks are in the order of their locks' ends: a
-- range of 16 blocks is summarised once it is full (autosummarize), and a key written into
-- the range being filled costs the index nothing, where a B-tree took an entry per charge
-- (about 90 bytes of WAL and a leaf page's work). A look reads the ranges that overlap its
-- window and the one being filled, and checks each key it reads against the window.
DROP INDEX idempotency_keys_lock_end;
CREATE INDEX idempotency_keys_lock_end ON idempotency_keys USING brin (locked_until)
    WITH (pages_per_range = 16, autosummarize = on);

-- +goose Down
DROP INDEX idempotency_keys_lock_end;
CREATE INDEX idempotency_keys_lock_end ON idempotency_keys (locked_until) WHERE charge_id IS NOT NULL;
