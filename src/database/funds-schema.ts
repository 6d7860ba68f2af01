/**
 * Migration 2: the accounts' funds, kept inline with the log (C10).
 *
 * `account_funds` is the one read model that must be exact at every commit, because admission decides on
 * it: `available = balance − pending − held`. It is maintained by a statement trigger on `ledger_events`,
 * so every append — whatever path wrote it — moves the funds in its own transaction, and the row always
 * equals a fold of the log (`ledger_recompute_funds` is that fold, used by rebuild and verify). Every
 * money event carries the amounts it moves, so the fold needs nothing but the event itself:
 *
 * | event            | balance        | held               | pending                     |
 * |------------------|----------------|--------------------|-----------------------------|
 * | CreditToppedUp   | + amountWon    |                    |                             |
 * | UsageAuthorized  |                | + holdWon          |                             |
 * | UsageVoided      |                | − releasedWon      |                             |
 * | UsageRecorded    |                | − heldWon          | + pendingWon                |
 * | UsageCharged     | − amountWon    |                    | − releasedPendingWon        |
 *
 * `open_holds` lists the holds not yet recorded or voided, for the orphan sweep. `gateway_instances` is
 * each gateway process's heartbeat: a hold whose process stopped beating is an orphan.
 *
 * Migration 4 (split-funds-schema.ts) splits the row in two — holds in one, everything else in the other —
 * and keeps `account_funds` as a view of their sum; this file is the schema as migration 2 created it.
 *
 * `ledger_authorize_usage` places holds: it locks the accounts' funds rows (in one order, so concurrent
 * calls never deadlock), grants each hold against what is available, in order, and appends the granted
 * `UsageAuthorized` events — one statement, one round trip, so a hot account's row is locked only from
 * the statement to its commit, never across a round trip.
 */
export const fundsSchemaSql = `
  CREATE TABLE account_funds (
    account_kind text NOT NULL,
    account_id text NOT NULL,
    balance_won numeric NOT NULL DEFAULT 0,
    pending_won numeric NOT NULL DEFAULT 0,
    held_won numeric NOT NULL DEFAULT 0,
    PRIMARY KEY (account_kind, account_id)
  );

  CREATE TABLE open_holds (
    request_id text PRIMARY KEY,
    account_kind text NOT NULL,
    account_id text NOT NULL,
    held_won numeric NOT NULL,
    gateway_instance text NOT NULL,
    placed_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
  );
  CREATE INDEX open_holds_by_instance ON open_holds (gateway_instance);

  CREATE TABLE gateway_instances (
    instance_id text PRIMARY KEY,
    seen_at timestamptz NOT NULL
  );

  -- The money each event moves, one row per event: the single definition both the trigger and the fold use.
  CREATE FUNCTION ledger_funds_movement(type text, data json,
    OUT balance_won numeric, OUT held_won numeric, OUT pending_won numeric)
  LANGUAGE sql IMMUTABLE AS $$
    SELECT
      CASE type WHEN 'CreditToppedUp' THEN (data->>'amountWon')::numeric
                WHEN 'UsageCharged' THEN -(data->>'amountWon')::numeric ELSE 0 END,
      CASE type WHEN 'UsageAuthorized' THEN (data->>'holdWon')::numeric
                WHEN 'UsageVoided' THEN -(data->>'releasedWon')::numeric
                WHEN 'UsageRecorded' THEN -coalesce((data->>'heldWon')::numeric, 0) ELSE 0 END,
      CASE type WHEN 'UsageRecorded' THEN coalesce((data->>'pendingWon')::numeric, 0)
                WHEN 'UsageCharged' THEN -coalesce((data->>'releasedPendingWon')::numeric, 0) ELSE 0 END
  $$;

  CREATE FUNCTION ledger_apply_funds() RETURNS trigger LANGUAGE plpgsql AS $$
  BEGIN
    INSERT INTO account_funds AS funds (account_kind, account_id, balance_won, held_won, pending_won)
    SELECT moved.account_kind, moved.account_id, sum(moved.balance_won), sum(moved.held_won), sum(moved.pending_won)
    FROM (
      SELECT inserted.data->'account'->>'kind' AS account_kind, inserted.data->'account'->>'id' AS account_id,
             (ledger_funds_movement(inserted.type, inserted.data)).*
      FROM inserted
      WHERE inserted.type IN ('CreditToppedUp', 'UsageAuthorized', 'UsageVoided', 'UsageRecorded', 'UsageCharged')
    ) moved
    GROUP BY moved.account_kind, moved.account_id
    -- Rows are locked in this order: two statements touching the same accounts cannot deadlock.
    ORDER BY moved.account_kind, moved.account_id
    ON CONFLICT (account_kind, account_id) DO UPDATE SET
      balance_won = funds.balance_won + excluded.balance_won,
      held_won = funds.held_won + excluded.held_won,
      pending_won = funds.pending_won + excluded.pending_won;

    INSERT INTO open_holds (request_id, account_kind, account_id, held_won, gateway_instance, placed_at, expires_at)
    SELECT data->>'requestId', data->'account'->>'kind', data->'account'->>'id', (data->>'holdWon')::numeric,
           data->>'gatewayInstance', (data->>'startedAt')::timestamptz, (data->>'expiresAt')::timestamptz
    FROM inserted WHERE type = 'UsageAuthorized';
    DELETE FROM open_holds
    WHERE request_id IN (SELECT data->>'requestId' FROM inserted WHERE type IN ('UsageRecorded', 'UsageVoided'));
    RETURN NULL;
  END $$;

  CREATE TRIGGER ledger_events_funds AFTER INSERT ON ledger_events
    REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION ledger_apply_funds();

  -- The fold of the whole log: what the trigger has kept, recomputed (rebuild, verify).
  CREATE FUNCTION ledger_recompute_funds() RETURNS void LANGUAGE plpgsql AS $$
  BEGIN
    DELETE FROM account_funds;
    INSERT INTO account_funds (account_kind, account_id, balance_won, held_won, pending_won)
    SELECT data->'account'->>'kind', data->'account'->>'id',
           sum((ledger_funds_movement(type, data)).balance_won),
           sum((ledger_funds_movement(type, data)).held_won),
           sum((ledger_funds_movement(type, data)).pending_won)
    FROM ledger_events
    WHERE type IN ('CreditToppedUp', 'UsageAuthorized', 'UsageVoided', 'UsageRecorded', 'UsageCharged')
    GROUP BY 1, 2;
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
  END $$;

  -- Input: a JSON array of { ordinal, event_id, stream_id, account_kind, account_id, estimate_won, data,
  -- metadata }, data without holdWon. Output: per ordinal, the hold granted (null: refused) and what was
  -- available to it. Streams must be new: the authorization is always a usage stream's first event.
  CREATE FUNCTION ledger_authorize_usage(requests json, order_offset bigint)
  RETURNS TABLE (ordinal int, hold_won numeric, available_won numeric, transaction_order bigint, event_position bigint)
  LANGUAGE plpgsql AS $$
  BEGIN
    PERFORM 1 FROM account_funds funds
    WHERE (funds.account_kind, funds.account_id) IN (
      SELECT request.account_kind, request.account_id
      FROM json_to_recordset(requests) AS request(account_kind text, account_id text))
    ORDER BY funds.account_kind, funds.account_id
    FOR UPDATE;
    -- A new statement, so a new snapshot: the locked rows as their last writer committed them.
    RETURN QUERY
    WITH request AS (
      SELECT * FROM json_to_recordset(requests) AS request(
        ordinal int, event_id uuid, stream_id text, account_kind text, account_id text, estimate_won numeric,
        data json, metadata json)
    ), decided AS (
      SELECT request.*,
             coalesce(funds.balance_won - funds.pending_won - funds.held_won, 0)
               - coalesce(sum(request.estimate_won) OVER (
                   PARTITION BY request.account_kind, request.account_id ORDER BY request.ordinal
                   ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), 0) AS available
      FROM request
      LEFT JOIN account_funds funds USING (account_kind, account_id)
    ), granted AS (
      SELECT decided.*, trim_scale(trunc(least(decided.estimate_won, decided.available), 6)) AS hold
      FROM decided WHERE decided.available >= 1
    ), appended AS (
      INSERT INTO ledger_events (transaction_order, event_id, stream_id, stream_version, type, schema_version, data, metadata)
      SELECT pg_current_xact_id()::text::bigint + order_offset, granted.event_id, granted.stream_id, 0,
             'UsageAuthorized', 1,
             (granted.data::jsonb || jsonb_build_object('holdWon', granted.hold::text))::json, granted.metadata
      FROM granted ORDER BY granted.ordinal
      RETURNING ledger_events.event_id, ledger_events.transaction_order, ledger_events.position
    )
    SELECT decided.ordinal, granted.hold, decided.available, appended.transaction_order, appended.position
    FROM decided
    LEFT JOIN granted ON granted.ordinal = decided.ordinal
    LEFT JOIN appended ON appended.event_id = decided.event_id
    ORDER BY decided.ordinal;
  END $$;
`;
