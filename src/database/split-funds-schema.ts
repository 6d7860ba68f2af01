/**
 * Migration 4: an account's funds in two rows, so that placing a hold never waits for a settlement.
 *
 * With one funds row per account, every money event of an account (holds, recorded usage, charges, voids,
 * top-ups) updated the same row and held its lock to commit. A hold then queued behind the worker's charge
 * batches and the previous request's recorded usage: on a busy account each authorization waited one or more
 * commits that cannot change its answer in any way that matters.
 *
 * Now:
 * - `account_funds_authorized`: one row per account that only authorizations touch. `authorized_won` is the
 *   sum of every hold ever placed; `ledger_authorize_usage` locks it (in one order) to serialise the
 *   decisions on one account, and its trigger adds the granted holds to it.
 * - `account_funds_settled`: the former `account_funds` table, moved by everything else — credit, releases
 *   of holds (recorded, voided), pending costs, charges. Its `held_won` is minus every hold released.
 * - the view `account_funds` nets them: `held_won = settled.held_won + authorized_won`, the open holds. Every
 *   reader (admission, verify, tests, operators) reads the view, as it read the table.
 *
 * Why an authorization may read the settled row without its lock: a settlement it cannot see yet (committing
 * concurrently) is a top-up, a void or a charge (each only raises what is available, or leaves it as it is),
 * or a recorded usage. A recorded usage releases its hold and adds its exact cost as pending: it lowers what is
 * available only when the cost exceeds the hold — the hold was too small, the one request C10's overdraft bound
 * already allows for — and the next authorization after its commit sees it. Two authorizations on one
 * account still serialise on the authorized row, so the check-and-hold stays atomic across every gateway.
 */
export const splitFundsSchemaSql = `
  ALTER TABLE account_funds RENAME TO account_funds_settled;
  ALTER TABLE account_funds_settled RENAME CONSTRAINT account_funds_pkey TO account_funds_settled_pkey;

  CREATE TABLE account_funds_authorized (
    account_kind text NOT NULL,
    account_id text NOT NULL,
    authorized_won numeric NOT NULL DEFAULT 0,
    PRIMARY KEY (account_kind, account_id)
  );
  INSERT INTO account_funds_authorized (account_kind, account_id)
  SELECT account_kind, account_id FROM account_funds_settled;

  -- A plain join (no aggregate), so a lookup of one account is two index probes.
  CREATE VIEW account_funds AS
  SELECT settled.account_kind, settled.account_id, settled.balance_won,
         settled.held_won + coalesce(authorized.authorized_won, 0) AS held_won, settled.pending_won
  FROM account_funds_settled settled
  LEFT JOIN account_funds_authorized authorized USING (account_kind, account_id);

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

    INSERT INTO open_holds (request_id, account_kind, account_id, held_won, gateway_instance, placed_at, expires_at)
    SELECT data->>'requestId', data->'account'->>'kind', data->'account'->>'id', (data->>'holdWon')::numeric,
           data->>'gatewayInstance', (data->>'startedAt')::timestamptz, (data->>'expiresAt')::timestamptz
    FROM inserted WHERE type = 'UsageAuthorized';
    DELETE FROM open_holds
    WHERE request_id IN (SELECT data->>'requestId' FROM inserted WHERE type IN ('UsageRecorded', 'UsageVoided'));
    RETURN NULL;
  END $$;

  -- The fold of the whole log, netted into the settled rows; every account gets its authorized row at zero.
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
  END $$;

  CREATE OR REPLACE FUNCTION ledger_authorize_usage(requests json, order_offset bigint)
  RETURNS TABLE (ordinal int, hold_won numeric, available_won numeric, transaction_order bigint, event_position bigint)
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
    -- A new statement, so a new snapshot: the locked rows as their last writer committed them, and the
    -- settled rows as last committed (see the migration's note on why they need no lock).
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
