-- +goose Up

-- The processor events POST /webhooks/stripe accepted, one row per event id: a delivery of an
-- id already here is a replay, answered 200, that changes nothing. The row is all paygate
-- keeps of an event (the evidence it carries goes with the reconciliation check it triggers):
-- its type, the charge and PaymentIntent it names, and what became of it (disposition:
-- check, settled, not_final, unknown_charge, not_paygate, ignored). Rows older than the
-- processor's retries (3 days at Stripe) are deleted after 30 days.
CREATE TABLE webhook_events (
    id             text PRIMARY KEY,
    type           text NOT NULL,
    charge_id      text,
    payment_intent text,
    disposition    text NOT NULL,
    received_at    timestamptz NOT NULL DEFAULT clock_timestamp()
);
CREATE INDEX webhook_events_received_at ON webhook_events (received_at);

-- +goose Down
DROP TABLE webhook_events;
