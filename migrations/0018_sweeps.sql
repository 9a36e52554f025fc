-- +goose Up

-- A processor event that names a charge paygate does not have (disposition unknown_charge)
-- has no charge to put in the review queue: it waits in review itself, with the event as
-- received (its account and the PaymentIntent its payload shows), and is kept past the
-- 30 days of the other event ids until a person has looked. Sweeps need no column of their
-- own: a sweep claims its charges by moving their next check to the end of its lease.
ALTER TABLE webhook_events
    ADD COLUMN account   text,
    ADD COLUMN evidence  jsonb,
    ADD COLUMN in_review boolean NOT NULL DEFAULT false;
CREATE INDEX webhook_events_in_review ON webhook_events (received_at) WHERE in_review;

-- +goose Down
DROP INDEX webhook_events_in_review;
ALTER TABLE webhook_events DROP COLUMN in_review, DROP COLUMN evidence, DROP COLUMN account;
