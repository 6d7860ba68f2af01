/**
 * Migration 5: per-key limits, checked in the same statement that grants holds (C10).
 *
 * Three more inline read models, kept by the ledger's statement trigger like `account_funds` and folded
 * afresh by `ledger_recompute_funds` (rebuild, verify):
 *
 * - `key_limits`: each key's latest `ApiKeyLimitsSet` — a spend limit per Asia/Seoul calendar month, a
 *   total spend limit (won) and a rate limit (requests per minute); null is no limit.
 * - `key_spend`: what each key has spent per Seoul month (the month of its usage's `startedAt`, as billing
 *   dates it): held, pending and charged, moved by the same events and amounts as the account's funds. A
 *   void names no key, so its key and month are its stream's authorization's. Split like the account's funds
 *   (migration 4) so that a hold never waits for a settlement: `key_spend_authorized` holds the sum of the
 *   holds placed, written only by authorizations; `key_spend_settled` everything else; the view `key_spend`
 *   nets them.
 * - `key_request_windows`: each key's latest minute (of the database clock, `recorded_at`) with holds and how
 *   many it has. A fixed one-minute window: one row per key, and a fold of the log like the rest.
 *
 * `ledger_authorize_usage` refuses a hold when its key has reached a limit: the key's requests this minute
 * (holds granted) reach its rate limit, or its held + pending + charged this month or in total reach a spend
 * limit. Every key pays from one account, whose authorized funds row the statement locks before deciding, so
 * two statements never decide on one key at once; settlements are read as last committed, as for the account.
 *
 * Unlike the account's, a key's hold is not cut down to the room left under its limit: it stays the whole
 * estimate (which covers the request's cost when the request names its maximum output). So everything the
 * key spent before its last admitted request is less than the limit — each earlier request counts at its
 * hold or at its exact cost, never less — and the key ends below its limit plus that one request's cost,
 * whatever the concurrency. A hold cut to the room could be outgrown by its cost while the room freed by
 * other requests' exact costs admits more: several such overshoots could add up.
 */
export const keyLimitsSchemaSql = `
  CREATE TABLE key_limits (
    key_id uuid PRIMARY KEY,
    monthly_spend_limit_won numeric,
    total_spend_limit_won numeric,
    rate_limit_requests_per_minute integer
  );

  CREATE TABLE key_spend_settled (
    key_id uuid NOT NULL,
    month text NOT NULL,
    held_won numeric NOT NULL DEFAULT 0,
    pending_won numeric NOT NULL DEFAULT 0,
    charged_won numeric NOT NULL DEFAULT 0,
    PRIMARY KEY (key_id, month)
  );

  CREATE TABLE key_spend_authorized (
    key_id uuid NOT NULL,
    month text NOT NULL,
    authorized_won numeric NOT NULL DEFAULT 0,
    PRIMARY KEY (key_id, month)
  );

  -- Grouped on the key columns, so a lookup of one key is pushed into both tables' primary keys.
  CREATE VIEW key_spend AS
  SELECT parts.key_id, parts.month, sum(parts.held_won) AS held_won, sum(parts.pending_won) AS pending_won,
         sum(parts.charged_won) AS charged_won
  FROM (
    SELECT settled.key_id, settled.month, settled.held_won, settled.pending_won, settled.charged_won
    FROM key_spend_settled settled
    UNION ALL
    SELECT authorized.key_id, authorized.month, authorized.authorized_won, 0, 0
    FROM key_spend_authorized authorized
  ) parts
  GROUP BY parts.key_id, parts.month;

  CREATE TABLE key_request_windows (
    key_id uuid PRIMARY KEY,
    window_start timestamptz NOT NULL,
    requests integer NOT NULL
  );

  -- The Seoul calendar month ('YYYY-MM') of an ISO instant (src/billing/seoul-calendar.ts).
  CREATE FUNCTION ledger_seoul_month(instant text) RETURNS text LANGUAGE sql STABLE AS $$
    SELECT to_char(instant::timestamptz AT TIME ZONE 'Asia/Seoul', 'YYYY-MM')
  $$;

  -- What each usage event moves on its key, one row per event: the single definition of the trigger and
  -- the fold. Its held and pending are ledger_funds_movement's, charged is the balance a charge takes;
  -- written out as a set-returning SQL function of one SELECT, which the planner inlines, reading each
  -- event's fields with one json_to_record (calling ledger_funds_movement from here, or '->>' field by
  -- field, doubled the cost of appending usage). 'authorization_data' is the data of the stream's
  -- UsageAuthorized, given for voids only (a void names neither key nor start).
  CREATE FUNCTION ledger_key_spend_movement(type text, data json, authorization_data json)
  RETURNS TABLE (key_id uuid, month text, held_won numeric, pending_won numeric, charged_won numeric)
  LANGUAGE sql STABLE AS $$
    SELECT coalesce(event."keyId", authorization_event."keyId"),
           to_char(coalesce(event."startedAt", authorization_event."startedAt") AT TIME ZONE 'Asia/Seoul',
                   'YYYY-MM'),
           CASE type WHEN 'UsageAuthorized' THEN event."holdWon"
                     WHEN 'UsageVoided' THEN -event."releasedWon"
                     WHEN 'UsageRecorded' THEN -coalesce(event."heldWon", 0) ELSE 0 END,
           CASE type WHEN 'UsageRecorded' THEN coalesce(event."pendingWon", 0)
                     WHEN 'UsageCharged' THEN -coalesce(event."releasedPendingWon", 0) ELSE 0 END,
           CASE type WHEN 'UsageCharged' THEN event."amountWon" ELSE 0 END
    FROM json_to_record(data) AS event("keyId" uuid, "startedAt" timestamptz, "holdWon" numeric,
           "releasedWon" numeric, "heldWon" numeric, "pendingWon" numeric, "releasedPendingWon" numeric,
           "amountWon" numeric)
    LEFT JOIN json_to_record(authorization_data) AS authorization_event("keyId" uuid, "startedAt" timestamptz)
      ON true
  $$;

  -- The same trigger as migration 2, and the key's limits, spend and request window beside the funds.
  CREATE OR REPLACE FUNCTION ledger_apply_funds() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    -- Holds: only ledger_authorize_usage appends them, and it holds these rows' locks already.
    INSERT INTO account_funds_authorized AS authorized (account_kind, account_id, authorized_won)
    SELECT data->'account'->>'kind', data->'account'->>'id', sum((data->>'holdWon')::numeric)
    FROM inserted WHERE type = 'UsageAuthorized'
    GROUP BY 1, 2 ORDER BY 1, 2
    ON CONFLICT (account_kind, account_id) DO UPDATE SET
      authorized_won = authorized.authorized_won + excluded.authorized_won;

    INSERT INTO account_funds_settled AS funds (account_kind, account_id, balance_won, held_won, pending_won)
    SELECT moved.account_kind, moved.account_id, sum(moved.balance_won), sum(moved.held_won), sum(moved.pending_won)
    FROM (
      SELECT inserted.data->'account'->>'kind' AS account_kind, inserted.data->'account'->>'id' AS account_id,
             (ledger_funds_movement(inserted.type, inserted.data)).*
      FROM inserted
      WHERE inserted.type IN ('CreditToppedUp', 'UsageVoided', 'UsageRecorded', 'UsageCharged')
    ) moved
    GROUP BY moved.account_kind, moved.account_id
    -- Rows are locked in this order: two statements touching the same accounts cannot deadlock.
    ORDER BY moved.account_kind, moved.account_id
    ON CONFLICT (account_kind, account_id) DO UPDATE SET
      balance_won = funds.balance_won + excluded.balance_won,
      held_won = funds.held_won + excluded.held_won,
      pending_won = funds.pending_won + excluded.pending_won;

    -- Holds on the authorized rows (under the account's authorized lock), settlements on the settled ones.
    INSERT INTO key_spend_authorized AS spend (key_id, month, authorized_won)
    SELECT movement.key_id, movement.month, sum(movement.held_won)
    FROM inserted CROSS JOIN LATERAL ledger_key_spend_movement(inserted.type, inserted.data, NULL) movement
    WHERE inserted.type = 'UsageAuthorized' AND movement.key_id IS NOT NULL
    GROUP BY movement.key_id, movement.month
    ORDER BY movement.key_id, movement.month
    ON CONFLICT (key_id, month) DO UPDATE SET authorized_won = spend.authorized_won + excluded.authorized_won;

    INSERT INTO key_spend_settled AS spend (key_id, month, held_won, pending_won, charged_won)
    SELECT moved.key_id, moved.month, sum(moved.held_won), sum(moved.pending_won), sum(moved.charged_won)
    FROM (
      SELECT movement.*
      FROM inserted
      -- A void's authorization is looked up by the unique index for voids alone: a join would let the
      -- planner scan the whole log for every appending statement.
      CROSS JOIN LATERAL ledger_key_spend_movement(inserted.type, inserted.data,
        CASE WHEN inserted.type = 'UsageVoided' THEN (
          SELECT held.data FROM ledger_events held
          WHERE held.stream_id = inserted.stream_id AND held.stream_version = 0 AND held.type = 'UsageAuthorized')
        END) movement
      WHERE inserted.type IN ('UsageVoided', 'UsageRecorded', 'UsageCharged')
    ) moved
    WHERE moved.key_id IS NOT NULL
    GROUP BY moved.key_id, moved.month
    ORDER BY moved.key_id, moved.month
    ON CONFLICT (key_id, month) DO UPDATE SET
      held_won = spend.held_won + excluded.held_won,
      pending_won = spend.pending_won + excluded.pending_won,
      charged_won = spend.charged_won + excluded.charged_won;

    INSERT INTO key_request_windows AS requests_window (key_id, window_start, requests)
    SELECT held.key_id, held.minute, count(*)
    FROM (
      SELECT (inserted.data->>'keyId')::uuid AS key_id, date_trunc('minute', inserted.recorded_at) AS minute,
             max(date_trunc('minute', inserted.recorded_at)) OVER (PARTITION BY inserted.data->>'keyId') AS latest
      FROM inserted WHERE inserted.type = 'UsageAuthorized'
    ) held
    WHERE held.minute = held.latest
    GROUP BY held.key_id, held.minute
    ORDER BY held.key_id
    ON CONFLICT (key_id) DO UPDATE SET
      requests = CASE
        WHEN requests_window.window_start = excluded.window_start THEN requests_window.requests + excluded.requests
        WHEN requests_window.window_start > excluded.window_start THEN requests_window.requests
        ELSE excluded.requests END,
      window_start = greatest(requests_window.window_start, excluded.window_start);

    INSERT INTO key_limits AS limits (key_id, monthly_spend_limit_won, total_spend_limit_won,
                                      rate_limit_requests_per_minute)
    SELECT DISTINCT ON (inserted.data->>'keyId')
           (inserted.data->>'keyId')::uuid, (inserted.data->>'monthlySpendLimitWon')::numeric,
           (inserted.data->>'totalSpendLimitWon')::numeric, (inserted.data->>'rateLimitRequestsPerMinute')::integer
    FROM inserted WHERE inserted.type = 'ApiKeyLimitsSet'
    ORDER BY inserted.data->>'keyId', inserted.stream_version DESC
    ON CONFLICT (key_id) DO UPDATE SET
      monthly_spend_limit_won = excluded.monthly_spend_limit_won,
      total_spend_limit_won = excluded.total_spend_limit_won,
      rate_limit_requests_per_minute = excluded.rate_limit_requests_per_minute;

    INSERT INTO open_holds (request_id, account_kind, account_id, held_won, gateway_instance, placed_at, expires_at)
    SELECT data->>'requestId', data->'account'->>'kind', data->'account'->>'id', (data->>'holdWon')::numeric,
           data->>'gatewayInstance', (data->>'startedAt')::timestamptz, (data->>'expiresAt')::timestamptz
    FROM inserted WHERE type = 'UsageAuthorized';
    DELETE FROM open_holds
    WHERE request_id IN (SELECT data->>'requestId' FROM inserted WHERE type IN ('UsageRecorded', 'UsageVoided'));
    RETURN NULL;
  END $$;

  -- The key tables as folds of the log, one query each: recompute writes them, verify compares them.
  CREATE FUNCTION ledger_fold_key_spend()
  RETURNS TABLE (key_id uuid, month text, held_won numeric, pending_won numeric, charged_won numeric)
  LANGUAGE sql STABLE AS $$
    SELECT moved.key_id, moved.month, sum(moved.held_won), sum(moved.pending_won), sum(moved.charged_won)
    FROM (
      SELECT movement.*
      FROM ledger_events event
      CROSS JOIN LATERAL ledger_key_spend_movement(event.type, event.data,
        CASE WHEN event.type = 'UsageVoided' THEN (
          SELECT held.data FROM ledger_events held
          WHERE held.stream_id = event.stream_id AND held.stream_version = 0 AND held.type = 'UsageAuthorized')
        END) movement
      WHERE event.type IN ('UsageAuthorized', 'UsageVoided', 'UsageRecorded', 'UsageCharged')
    ) moved
    WHERE moved.key_id IS NOT NULL
    GROUP BY moved.key_id, moved.month
  $$;

  CREATE FUNCTION ledger_fold_key_request_windows()
  RETURNS TABLE (key_id uuid, window_start timestamptz, requests integer)
  LANGUAGE sql STABLE AS $$
    SELECT held.key_id, held.minute, count(*)::integer
    FROM (
      SELECT (data->>'keyId')::uuid AS key_id, date_trunc('minute', recorded_at) AS minute,
             max(date_trunc('minute', recorded_at)) OVER (PARTITION BY data->>'keyId') AS latest
      FROM ledger_events WHERE type = 'UsageAuthorized'
    ) held
    WHERE held.minute = held.latest
    GROUP BY held.key_id, held.minute
  $$;

  CREATE FUNCTION ledger_fold_key_limits()
  RETURNS TABLE (key_id uuid, monthly_spend_limit_won numeric, total_spend_limit_won numeric,
                 rate_limit_requests_per_minute integer)
  LANGUAGE sql STABLE AS $$
    SELECT DISTINCT ON (data->>'keyId') (data->>'keyId')::uuid, (data->>'monthlySpendLimitWon')::numeric,
           (data->>'totalSpendLimitWon')::numeric, (data->>'rateLimitRequestsPerMinute')::integer
    FROM ledger_events WHERE type = 'ApiKeyLimitsSet'
    ORDER BY data->>'keyId', stream_version DESC
  $$;

  CREATE OR REPLACE FUNCTION ledger_recompute_funds() RETURNS void LANGUAGE plpgsql AS $$
  BEGIN
    DELETE FROM account_funds_authorized;
    DELETE FROM account_funds_settled;
    INSERT INTO account_funds_settled (account_kind, account_id, balance_won, held_won, pending_won)
    SELECT data->'account'->>'kind', data->'account'->>'id',
           sum((ledger_funds_movement(type, data)).balance_won),
           sum((ledger_funds_movement(type, data)).held_won),
           sum((ledger_funds_movement(type, data)).pending_won)
    FROM ledger_events
    WHERE type IN ('CreditToppedUp', 'UsageAuthorized', 'UsageVoided', 'UsageRecorded', 'UsageCharged')
    GROUP BY 1, 2;
    INSERT INTO account_funds_authorized (account_kind, account_id)
    SELECT account_kind, account_id FROM account_funds_settled;
    DELETE FROM open_holds;
    INSERT INTO open_holds (request_id, account_kind, account_id, held_won, gateway_instance, placed_at, expires_at)
    SELECT held.data->>'requestId', held.data->'account'->>'kind', held.data->'account'->>'id',
           (held.data->>'holdWon')::numeric, held.data->>'gatewayInstance',
           (held.data->>'startedAt')::timestamptz, (held.data->>'expiresAt')::timestamptz
    FROM ledger_events held
    WHERE held.type = 'UsageAuthorized'
      AND NOT EXISTS (
        SELECT 1 FROM ledger_events settled
        WHERE settled.stream_id = held.stream_id AND settled.stream_version > held.stream_version
          AND settled.type IN ('UsageRecorded', 'UsageVoided'));
    -- Folded, everything is settled: the fold nets holds and their releases per key and month.
    DELETE FROM key_spend_authorized;
    DELETE FROM key_spend_settled;
    INSERT INTO key_spend_settled SELECT * FROM ledger_fold_key_spend();
    DELETE FROM key_request_windows;
    INSERT INTO key_request_windows SELECT * FROM ledger_fold_key_request_windows();
    DELETE FROM key_limits;
    INSERT INTO key_limits SELECT * FROM ledger_fold_key_limits();
  END $$;

  -- As migration 4's, and each request's key must be within its limits; a refusal says which limit.
  DROP FUNCTION ledger_authorize_usage(json, bigint);
  CREATE FUNCTION ledger_authorize_usage(requests json, order_offset bigint)
  RETURNS TABLE (ordinal int, hold_won numeric, available_won numeric, transaction_order bigint,
                 event_position bigint, refusal text, limit_value numeric)
  LANGUAGE plpgsql AS $$
  BEGIN
    -- Every account asked for has an authorized row to lock (an existing row is not locked by this insert).
    INSERT INTO account_funds_authorized (account_kind, account_id)
    SELECT DISTINCT request.account_kind, request.account_id
    FROM json_to_recordset(requests) AS request(account_kind text, account_id text)
    ORDER BY 1, 2
    ON CONFLICT (account_kind, account_id) DO NOTHING;
    PERFORM 1 FROM account_funds_authorized authorized
    WHERE (authorized.account_kind, authorized.account_id) IN (
      SELECT request.account_kind, request.account_id
      FROM json_to_recordset(requests) AS request(account_kind text, account_id text))
    ORDER BY authorized.account_kind, authorized.account_id
    FOR UPDATE;
    -- A new statement, so a new snapshot: the locked rows as their last writer committed them, with the
    -- keys' authorized rows (only a holder of the account's authorized row writes them), and the settled
    -- rows of both as last committed (migration 4).
    RETURN QUERY
    WITH request AS (
      SELECT request.*, (request.data->>'keyId')::uuid AS key_id,
             ledger_seoul_month(request.data->>'startedAt') AS month
      FROM json_to_recordset(requests) AS request(
        ordinal int, event_id uuid, stream_id text, account_kind text, account_id text, estimate_won numeric,
        data json, metadata json)
    ), keyed AS (
      SELECT request.*, limits.monthly_spend_limit_won, limits.total_spend_limit_won,
             limits.rate_limit_requests_per_minute,
             coalesce((SELECT sum(spend.held_won + spend.pending_won + spend.charged_won) FROM key_spend_settled spend
               WHERE spend.key_id = request.key_id AND spend.month = request.month), 0)
               + coalesce((SELECT sum(spend.authorized_won) FROM key_spend_authorized spend
               WHERE spend.key_id = request.key_id AND spend.month = request.month), 0) AS month_spent,
             coalesce((SELECT sum(spend.held_won + spend.pending_won + spend.charged_won) FROM key_spend_settled spend
               WHERE spend.key_id = request.key_id), 0)
               + coalesce((SELECT sum(spend.authorized_won) FROM key_spend_authorized spend
               WHERE spend.key_id = request.key_id), 0) AS total_spent,
             (SELECT requests_window.requests FROM key_request_windows requests_window
               WHERE requests_window.key_id = request.key_id
                 AND requests_window.window_start = date_trunc('minute', now())) AS minute_requests
      FROM request
      LEFT JOIN key_limits limits ON limits.key_id = request.key_id
    ), decided AS (
      SELECT keyed.*,
             coalesce(funds.balance_won - funds.pending_won - funds.held_won, 0)
               - coalesce(sum(keyed.estimate_won) OVER (
                   PARTITION BY keyed.account_kind, keyed.account_id ORDER BY keyed.ordinal
                   ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS available,
             keyed.monthly_spend_limit_won - coalesce(keyed.month_spent, 0)
               - coalesce(sum(keyed.estimate_won) OVER (
                   PARTITION BY keyed.key_id, keyed.month ORDER BY keyed.ordinal
                   ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS month_room,
             keyed.total_spend_limit_won - coalesce(keyed.total_spent, 0)
               - coalesce(sum(keyed.estimate_won) OVER (
                   PARTITION BY keyed.key_id ORDER BY keyed.ordinal
                   ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS total_room,
             coalesce(keyed.minute_requests, 0)
               + count(*) OVER (
                   PARTITION BY keyed.key_id ORDER BY keyed.ordinal
                   ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS minute_count
      FROM keyed
      LEFT JOIN account_funds funds USING (account_kind, account_id)
    ), judged AS (
      SELECT decided.*,
             CASE WHEN decided.minute_count >= decided.rate_limit_requests_per_minute THEN 'rate'
                  WHEN decided.month_room <= 0 THEN 'monthly-spend'
                  WHEN decided.total_room <= 0 THEN 'total-spend'
                  WHEN decided.available < 1 THEN 'funds' END AS refused_by
      FROM decided
    ), granted AS (
      -- The account's room bounds the hold; the key's does not (see the top of this migration).
      SELECT judged.*, trim_scale(trunc(least(judged.estimate_won, judged.available), 6)) AS hold
      FROM judged WHERE judged.refused_by IS NULL
    ), appended AS (
      INSERT INTO ledger_events (transaction_order, event_id, stream_id, stream_version, type, schema_version, data, metadata)
      SELECT pg_current_xact_id()::text::bigint + order_offset, granted.event_id, granted.stream_id, 0,
             'UsageAuthorized', 1,
             (granted.data::jsonb || jsonb_build_object('holdWon', granted.hold::text))::json, granted.metadata
      FROM granted ORDER BY granted.ordinal
      RETURNING ledger_events.event_id, ledger_events.transaction_order, ledger_events.position
    )
    SELECT judged.ordinal, granted.hold, judged.available, appended.transaction_order, appended.position,
           judged.refused_by,
           CASE judged.refused_by WHEN 'rate' THEN judged.rate_limit_requests_per_minute::numeric
                                  WHEN 'monthly-spend' THEN judged.monthly_spend_limit_won
                                  WHEN 'total-spend' THEN judged.total_spend_limit_won END
    FROM judged
    LEFT JOIN granted ON granted.ordinal = judged.ordinal
    LEFT JOIN appended ON appended.event_id = judged.event_id
    ORDER BY judged.ordinal;
  END $$;
`;
