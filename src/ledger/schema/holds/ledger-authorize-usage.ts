import type { DeclaredFunction } from "../../../database/declared-schema";

/**
 * Places holds (C10): locks the accounts' authorized funds rows (in one order, so concurrent calls never
 * deadlock), grants each hold against what is available, in order, and appends the granted
 * `UsageAuthorized` events — one statement, one round trip, so a hot account's row is locked only from the
 * statement to its commit, never across a round trip. The settled rows are read as last committed
 * (../inline-funds/account-funds.ts says why they need no lock).
 *
 * A hold is refused when its key has reached a limit (../inline-funds/key-limits.ts): the key's requests
 * this minute (holds granted) reach its rate limit, or its held + pending + charged this month or in total
 * reach a spend limit.
 * Every key pays from one account, whose authorized row the statement locks before deciding, so two
 * statements never decide on one key at once.
 *
 * Unlike the account's, a key's hold is not cut down to the room left under its limit: it stays the whole
 * estimate (which covers the request's cost when the request names its maximum output). So everything the
 * key spent before its last admitted request is less than the limit — each earlier request counts at its
 * hold or at its exact cost, never less — and the key ends below its limit plus that one request's cost,
 * whatever the concurrency. A hold cut to the room could be outgrown by its cost while the room freed by
 * other requests' exact costs admits more: several such overshoots could add up.
 *
 * Input: a JSON array of { ordinal, event_id, stream_id, account_kind, account_id, estimate_won, key_id,
 * started_at, data, metadata }, data without holdWon; the account, estimate, key and start are the data's own,
 * beside it so that reading them parses nothing again. Output: per ordinal, the hold granted (null: refused),
 * what was available to it, where its event landed, and a refusal's reason and limit. Streams must be new: the
 * authorization is always a usage stream's first event.
 */
export const ledgerAuthorizeUsageFunction: DeclaredFunction = {
  kind: "function",
  name: "ledger_authorize_usage",
  sql: `
    CREATE OR REPLACE FUNCTION ledger_authorize_usage(requests json, order_offset bigint)
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
      -- rows of both as last committed.
      RETURN QUERY
      WITH request AS (
        -- The key and the start from the data only when a caller of an earlier release sent them only there.
        SELECT request.ordinal, request.event_id, request.stream_id, request.account_kind, request.account_id,
               request.estimate_won, request.data, request.metadata,
               coalesce(request.key_id, (request.data->>'keyId')::uuid) AS key_id,
               ledger_seoul_month(coalesce(request.started_at, request.data->>'startedAt')) AS month
        FROM json_to_recordset(requests) AS request(
          ordinal int, event_id uuid, stream_id text, account_kind text, account_id text, estimate_won numeric,
          key_id uuid, started_at text, data json, metadata json)
      ), keyed AS MATERIALIZED (
        -- Materialized, so each lookup runs once per request (inlined, the window sums below repeated them);
        -- and only for a limit the key has: most keys have none, and a key's spend rows are hot (updated by
        -- every hold), so reading them is the dearest part of this statement. No limit: NULL room, never refused.
        SELECT request.*, limits.monthly_spend_limit_won, limits.total_spend_limit_won,
               limits.rate_limit_requests_per_minute,
               CASE WHEN limits.monthly_spend_limit_won IS NOT NULL THEN
                 coalesce((SELECT sum(spend.held_won + spend.pending_won + spend.charged_won) FROM key_spend_settled spend
                   WHERE spend.key_id = request.key_id AND spend.month = request.month), 0)
                 + coalesce((SELECT sum(spend.authorized_won) FROM key_spend_authorized spend
                   WHERE spend.key_id = request.key_id AND spend.month = request.month), 0) END AS month_spent,
               CASE WHEN limits.total_spend_limit_won IS NOT NULL THEN
                 coalesce((SELECT sum(spend.held_won + spend.pending_won + spend.charged_won) FROM key_spend_settled spend
                   WHERE spend.key_id = request.key_id), 0)
                 + coalesce((SELECT sum(spend.authorized_won) FROM key_spend_authorized spend
                   WHERE spend.key_id = request.key_id), 0) END AS total_spent,
               CASE WHEN limits.rate_limit_requests_per_minute IS NOT NULL THEN
                 (SELECT requests_window.requests FROM key_request_windows requests_window
                   WHERE requests_window.key_id = request.key_id
                     AND requests_window.window_start = date_trunc('minute', now())) END AS minute_requests
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
        -- The account's room bounds the hold; the key's does not (see this function's declaration).
        SELECT held.*, (held.data::jsonb || jsonb_build_object('holdWon', held.hold::text))::json AS event_data
        FROM (
          SELECT judged.*, trim_scale(trunc(least(judged.estimate_won, judged.available), 6)) AS hold
          FROM judged WHERE judged.refused_by IS NULL
        ) held
      ), appended AS (
        -- A hold is its stream's first event, so its chain link is computed here, from the zero hash
        -- (../ledger-events-chain.ts): the chain's row trigger would cost a PL/pgSQL call per hold.
        INSERT INTO ledger_events (transaction_order, event_id, stream_id, stream_version, type, schema_version, data,
                                   metadata, chain_hash)
        SELECT pg_current_xact_id()::text::bigint + order_offset, granted.event_id, granted.stream_id, 0,
               'UsageAuthorized', 1, granted.event_data, granted.metadata,
               ledger_event_hash(decode(repeat('00', 32), 'hex'), granted.stream_id, 0, granted.event_id,
                 'UsageAuthorized', 1::smallint, granted.event_data, granted.metadata)
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
  `,
};
