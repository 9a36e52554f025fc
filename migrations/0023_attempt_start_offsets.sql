-- +goose Up

-- An attempt's start in a charge's attempt_log is written as microseconds since the charge was
-- created (about 5 digits for a first attempt, where microseconds since 1970 took 16); logs
-- written before hold microseconds since 1970, which are never below 10^15 (2001-09-09), where
-- an offset always is. The view reads both.
CREATE OR REPLACE VIEW charge_attempts AS
SELECT c.id AS charge_id, (e->>0)::int AS n,
       CASE WHEN (e->>1)::bigint >= 1000000000000000 THEN to_timestamp((e->>1)::bigint / 1e6)
            ELSE c.created_at + (e->>1)::bigint * interval '1 microsecond' END AS started_at,
       (e->>2)::bigint AS duration_ms, (e->>3)::bigint AS timeout_ms, e->>4 AS class,
       NULLIF((e->>5)::int, 0) AS http_status, NULLIF(e->>6, '') AS processor_code, NULLIF(e->>7, '') AS request_id,
       (e->>8)::bigint AS retry_after_ms, (e->>9)::bigint AS backoff_ms,
       (e->>10)::float8 AS budget_tokens_before, (e->>11)::float8 AS budget_tokens_after
  FROM charges c, jsonb_array_elements(c.attempt_log::jsonb) e;

-- +goose Down
-- The logs written since hold offsets: they become absolute times again.
UPDATE charges c SET attempt_log = (
       SELECT '[' || string_agg(CASE WHEN (e->>1)::bigint >= 1000000000000000 THEN e
                                     ELSE jsonb_set(e, '{1}', to_jsonb((extract(epoch FROM c.created_at) * 1000000)::bigint
                                                                       + (e->>1)::bigint)) END::text, ',' ORDER BY o) || ']'
         FROM jsonb_array_elements(c.attempt_log::jsonb) WITH ORDINALITY AS x(e, o))
 WHERE EXISTS (SELECT 1 FROM jsonb_array_elements(c.attempt_log::jsonb) e WHERE (e->>1)::bigint < 1000000000000000);
CREATE OR REPLACE VIEW charge_attempts AS
SELECT c.id AS charge_id, (e->>0)::int AS n, to_timestamp((e->>1)::bigint / 1e6) AS started_at,
       (e->>2)::bigint AS duration_ms, (e->>3)::bigint AS timeout_ms, e->>4 AS class,
       NULLIF((e->>5)::int, 0) AS http_status, NULLIF(e->>6, '') AS processor_code, NULLIF(e->>7, '') AS request_id,
       (e->>8)::bigint AS retry_after_ms, (e->>9)::bigint AS backoff_ms,
       (e->>10)::float8 AS budget_tokens_before, (e->>11)::float8 AS budget_tokens_after
  FROM charges c, jsonb_array_elements(c.attempt_log::jsonb) e;
