-- +goose Up

-- The retry budget and circuit breakers every replica shares under PAYGATE_BUDGET_SCOPE=fleet.
--
-- One bucket per scope (kind 'scope': processor account, merchant) and one global bucket
-- (kind 'global', account and merchant empty). Replicas add their own deposits to tokens and
-- lease whole tokens out of it, spending them in memory; the floor (min_per_sec) accrues once
-- for the whole fleet, up to accrued_at, on the clocks of the replicas that sync. Rows are
-- updated several times a second: the free space keeps the updates HOT.
CREATE TABLE fleet_budgets (
    kind        text NOT NULL CHECK (kind IN ('global', 'scope')),
    account     text NOT NULL,
    merchant    text NOT NULL,
    tokens      double precision NOT NULL CHECK (tokens >= 0),
    burst       double precision NOT NULL CHECK (burst >= 1),
    min_per_sec double precision NOT NULL CHECK (min_per_sec >= 0),
    accrued_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL DEFAULT now(),
    updated_by  text NOT NULL DEFAULT '',
    PRIMARY KEY (kind, account, merchant)
) WITH (fillfactor = 50);

-- Until when the fleet holds each processor account's circuit open: the latest opening any
-- replica decided, and which replica it was.
CREATE TABLE fleet_breakers (
    account    text PRIMARY KEY,
    open_until timestamptz NOT NULL,
    opened_at  timestamptz NOT NULL,
    opened_by  text NOT NULL DEFAULT ''
) WITH (fillfactor = 50);

-- +goose Down
DROP TABLE fleet_breakers;
DROP TABLE fleet_budgets;
