import type { DeclaredFunction } from "../../../database/declared-schema";

/**
 * Places holds (C10): locks the accounts' authorized funds rows (in one order, so concurrent calls never
 * deadlock), grants each hold against what is available, in order, and inserts each granted hold as its
 * request's row (request-holds.ts) — one statement, one round trip, so a hot account's row is locked only
 * from the statement to its commit, never across a round trip. What is available counts the rows of the
 * holds not yet logged (../inline-funds/account-funds.ts says why the rest needs no lock). The hold's
 * `UsageAuthorized` reaches the log later, with its settlement, written by the settled-holds log writer.
 *
 * The batch's requests are decided one after another, each against the snapshot plus what the batch granted
 * before it, as if each had its own statement: a refused request holds nothing, so it takes no room, spend or
 * rate from the requests after it. The lookups are set-wise (one plan for the batch); only the decision
 * loops, at a few microseconds per request.
 *
 * A hold is refused when its key may no longer be used as the request's gateway found it: deactivated or
 * deleted (its row in the active-keys projection, which a key's management call waits for, C4), or no longer
 * allowed the request's model (its inline limits, C14; the request names the `allowed_models` entries that
 * would allow its model, src/keys/allowed-models.ts). A gateway admits requests from its own copy of the keys,
 * which another process's change reaches a notification later: deciding here, with the grant, makes a key
 * change effective for the next request on every gateway.
 *
 * A hold is refused when its key has reached a limit (../inline-funds/key-limits.ts): the key's requests
 * this minute (holds granted) reach its rate limit, or its held + pending + charged this month or in total
 * reach a spend limit — each counting the key's hold rows not yet logged as well as the log's folds
 * (ledger-key-limit-usage.ts, asked only for a key with such a limit).
 * Every key pays from one account, whose authorized row the statement locks before deciding, so two
 * statements never decide on one key at once.
 *
 * The account's overdraft stays within one request's cost (C10) however the holds interleave: a hold cut
 * down to the room left (its estimate above what was available) may cost up to its estimate, so until it
 * settles, the part of its estimate it does not cover counts against the account as if held, so a later hold
 * is granted (or cut) only against room beyond that whole estimate: of the cut holds open at once, only the
 * last one's shortfall is uncounted.
 * Counted from the open rows of this release (a hold an earlier release appended alone is counted as held).
 * Requests within the funds keep their whole estimates held, as before: none of them is refused for it.
 *
 * Unlike the account's, a key's hold is not cut down to the room left under its limit: it stays the whole
 * estimate (which covers the request's cost when the request names its maximum output). So everything the
 * key spent before its last admitted request is less than the limit — each earlier request counts at its
 * hold or at its exact cost, never less — and the key ends below its limit plus that one request's cost,
 * whatever the concurrency. A hold cut to the room could be outgrown by its cost while the room freed by
 * other requests' exact costs admits more: several such overshoots could add up.
 *
 * Input: a JSON array of { ordinal, event_id, schema_version, request_id, account_kind, account_id, key_id,
 * user_id, organization_id, model, model_entries, endpoint, streamed, started_at, expires_at,
 * gateway_instance, input_tokens_max, output_tokens_max, estimate_won }: the authorization's fields, which
 * the row keeps as columns (ledger-hold-authorization.ts builds the event from them, with the grant as
 * `holdWon` and the database's clock at the grant as its `occurredAt`), and the allowed-models entries that
 * would allow its model. Output: per ordinal, the hold granted (null: refused), what was available to it, and
 * a refusal's reason and limit.
 */
export const ledgerAuthorizeUsageFunction: DeclaredFunction = {
  kind: "function",
  name: "ledger_authorize_usage",
  sql: `
    CREATE OR REPLACE FUNCTION ledger_authorize_usage(requests json)
    RETURNS TABLE (ordinal int, hold_won numeric, available_won numeric, refusal text, limit_value numeric)
    LANGUAGE plpgsql AS $$
    DECLARE
      candidate record;
      account_entry text;
      month_entry text;
      key_entry text;
      available numeric;
      month_room numeric;
      total_room numeric;
      minute_count bigint;
      refused_by text;
      granted_hold numeric;
      -- What this batch has granted before the request being decided: estimates by account, by key and month
      -- and by key; requests by key (the last two only for a key with a limit).
      granted_won jsonb := '{}';
      granted_requests jsonb := '{}';
      decided_ordinals int[] := '{}';
      decided_holds numeric[] := '{}';
      decided_availables numeric[] := '{}';
      decided_refusals text[] := '{}';
      decided_limits numeric[] := '{}';
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
      -- hold rows of the account (only a holder of its authorized row inserts them), and the settled rows and
      -- logged batches as last committed. Each request is then decided in order against what the snapshot
      -- shows plus what this batch granted before it: a refused request takes nothing from those after it.
      FOR candidate IN
        WITH request AS (
          SELECT request.*, ledger_seoul_month(request.started_at::text) AS month
          FROM json_to_recordset(requests) AS request(
            ordinal int, account_kind text, account_id text, key_id uuid, model_entries json,
            started_at timestamptz, estimate_won numeric)
        ), keyed AS MATERIALIZED (
          -- Materialized, so each key's usage is looked up once per request; and only for a key with a spend
          -- or rate limit (most keys have none: never refused), by ledger_key_limit_usage, whose lookups the
          -- plan of this statement then does not hold (see its declaration). OFFSET 0 keeps the lateral
          -- query a plan of its own, whose filter on the limits runs before the call: pulled up into the join,
          -- the filter would run after it, and every key would pay for the call.
          -- The key's active row is one primary-key probe per request (lateral, kept apart by OFFSET 0),
          -- whatever the table's size: joined whole, the generic plan hashed the whole table on every call.
          SELECT request.*, limits.monthly_spend_limit_won, limits.total_spend_limit_won,
                 limits.rate_limit_requests_per_minute, used.month_spent, used.total_spent, used.minute_requests,
                 coalesce(active.status = 1, false) AS key_active,
                 -- The request's entries are read only for a key limited to some models; most keys are not.
                 CASE WHEN limits.allowed_models IS NULL THEN true
                      ELSE limits.allowed_models && ARRAY(SELECT json_array_elements_text(request.model_entries))
                 END AS model_allowed
          FROM request
          LEFT JOIN LATERAL (
            SELECT keys.status FROM projection_active_keys keys WHERE keys.key_id = request.key_id::text OFFSET 0
          ) active ON true
          LEFT JOIN key_limits limits ON limits.key_id = request.key_id
          LEFT JOIN LATERAL (
            SELECT * FROM ledger_key_limit_usage(request.key_id, request.account_kind, request.account_id,
              request.month, limits.monthly_spend_limit_won IS NOT NULL, limits.total_spend_limit_won IS NOT NULL,
              limits.rate_limit_requests_per_minute IS NOT NULL)
            WHERE limits.monthly_spend_limit_won IS NOT NULL OR limits.total_spend_limit_won IS NOT NULL
               OR limits.rate_limit_requests_per_minute IS NOT NULL
            OFFSET 0
          ) used ON true
        ), funds AS MATERIALIZED (
          -- Each account's funds once, however many of its requests the batch holds (the view sums its rows),
          -- with what its open holds cut to the room left do not cover (see this function's declaration).
          SELECT account_funds.* FROM account_funds
          WHERE (account_funds.account_kind, account_funds.account_id) IN (
            SELECT DISTINCT keyed.account_kind, keyed.account_id FROM keyed)
        )
        SELECT keyed.*,
               coalesce(funds.balance_won - funds.pending_won - funds.held_won - funds.uncovered_won, 0)
                 AS funds_available
        FROM keyed LEFT JOIN funds USING (account_kind, account_id)
        ORDER BY keyed.ordinal
      LOOP
        account_entry := candidate.account_kind || ' ' || candidate.account_id;
        month_entry := candidate.key_id || ' ' || candidate.month;
        key_entry := candidate.key_id::text;
        available := candidate.funds_available - coalesce((granted_won ->> account_entry)::numeric, 0);
        month_room := candidate.monthly_spend_limit_won - coalesce(candidate.month_spent, 0)
          - coalesce((granted_won ->> month_entry)::numeric, 0);
        total_room := candidate.total_spend_limit_won - coalesce(candidate.total_spent, 0)
          - coalesce((granted_won ->> key_entry)::numeric, 0);
        minute_count := coalesce(candidate.minute_requests, 0) + coalesce((granted_requests ->> key_entry)::bigint, 0);
        refused_by := CASE WHEN NOT candidate.key_active THEN 'key-inactive'
                           WHEN NOT candidate.model_allowed THEN 'model-not-allowed'
                           WHEN minute_count >= candidate.rate_limit_requests_per_minute THEN 'rate'
                           WHEN month_room <= 0 THEN 'monthly-spend'
                           WHEN total_room <= 0 THEN 'total-spend'
                           WHEN available < 1 THEN 'funds' END;
        granted_hold := NULL;
        IF refused_by IS NULL THEN
          -- The account's room bounds the hold; the key's does not (see this function's declaration). A hold
          -- cut to the room counts at its estimate, as an open one does.
          granted_hold := trim_scale(trunc(least(candidate.estimate_won, available), 6));
          granted_won := granted_won || jsonb_build_object(
            account_entry, candidate.estimate_won + coalesce((granted_won ->> account_entry)::numeric, 0));
          IF candidate.monthly_spend_limit_won IS NOT NULL OR candidate.total_spend_limit_won IS NOT NULL
             OR candidate.rate_limit_requests_per_minute IS NOT NULL THEN
            granted_won := granted_won || jsonb_build_object(
              month_entry, candidate.estimate_won + coalesce((granted_won ->> month_entry)::numeric, 0),
              key_entry, candidate.estimate_won + coalesce((granted_won ->> key_entry)::numeric, 0));
            granted_requests := granted_requests || jsonb_build_object(
              key_entry, coalesce((granted_requests ->> key_entry)::bigint, 0) + 1);
          END IF;
        END IF;
        decided_ordinals := decided_ordinals || candidate.ordinal;
        decided_holds := decided_holds || granted_hold;
        decided_availables := decided_availables || available;
        decided_refusals := decided_refusals || refused_by;
        decided_limits := decided_limits || CASE refused_by WHEN 'rate' THEN candidate.rate_limit_requests_per_minute::numeric
                                            WHEN 'monthly-spend' THEN candidate.monthly_spend_limit_won
                                            WHEN 'total-spend' THEN candidate.total_spend_limit_won END;
      END LOOP;
      RETURN QUERY
      WITH decision AS (
        SELECT * FROM unnest(decided_ordinals, decided_holds, decided_availables, decided_refusals, decided_limits)
          AS decision(ordinal, hold, available, refused_by, limit_value)
      ), inserted AS (
        INSERT INTO request_holds (request_id, account_kind, account_id, key_id, month, hold_won, gateway_instance,
                                   placed_at, expires_at, authorization_event_id, authorization_schema_version,
                                   user_id, organization_id, model, endpoint, streamed, started_at,
                                   input_tokens_max, output_tokens_max, estimated_won)
        SELECT request.request_id, request.account_kind, request.account_id, request.key_id,
               ledger_seoul_month(request.started_at::text), decision.hold, request.gateway_instance, now(),
               request.expires_at, request.event_id, request.schema_version, request.user_id,
               request.organization_id, request.model, request.endpoint, request.streamed, request.started_at,
               request.input_tokens_max, request.output_tokens_max, request.estimate_won
        FROM json_to_recordset(requests) AS request(
          ordinal int, event_id uuid, schema_version smallint, request_id text, account_kind text, account_id text,
          key_id uuid, user_id text, organization_id text, model text, endpoint text, streamed boolean,
          started_at timestamptz, expires_at timestamptz, gateway_instance text, input_tokens_max bigint,
          output_tokens_max bigint, estimate_won numeric)
        JOIN decision ON decision.ordinal = request.ordinal
        WHERE decision.hold IS NOT NULL
        ORDER BY request.ordinal
      )
      SELECT decision.ordinal, decision.hold, decision.available, decision.refused_by, decision.limit_value
      FROM decision ORDER BY decision.ordinal;
    END $$;
  `,
};
