import type pg from "pg";
import type { ProjectionDifference } from "./rebuild/projection-differences";

/**
 * The inline read models kept by the ledger's own trigger (src/ledger/schema/inline-funds/: the trigger
 * ledger_apply_funds, its folds and ledger_recompute_funds): the accounts' funds, the open holds, and each
 * key's limits, spend and requests this minute. They are not projections with checkpoints — every commit
 * keeps them exact — but they are derived all the same, so rebuild recomputes them and verify compares them
 * with a fold.
 */

export const inlineFundsName = "funds (inline)";

type Queryable = Pick<pg.ClientBase, "query">;

/**
 * Folds the whole log into the inline tables again, in the caller's transaction. `foldedUpTo`: the caller
 * folded the money up to that transaction order already (a rebuild in SQL, from its chunks).
 */
export async function recomputeInlineFunds(client: Queryable, foldedUpTo?: bigint): Promise<void> {
  if (foldedUpTo === undefined) await client.query("SELECT ledger_recompute_funds()");
  else await client.query("SELECT ledger_recompute_funds($1)", [String(foldedUpTo)]);
}

/**
 * Compares the live funds with a fold of the log, in the caller's snapshot (run it inside a repeatable-read
 * transaction so the log and the rows are read at one instant).
 */
export async function verifyInlineFunds(client: Queryable): Promise<ProjectionDifference[]> {
  const funds = await accountFundsDifferences(client);
  const holds = await openHoldsDifferences(client);
  const keys = await keyTablesDifferences(client);
  return [...keys, ...funds, ...holds];
}

/** Each account's balance, held and pending amounts that differ from the fold. */
async function accountFundsDifferences(client: Queryable): Promise<ProjectionDifference[]> {
  const funds = await client.query<{
    account: string;
    column: string;
    live: string | null;
    expected: string | null;
  }>(
    `WITH folded AS (
       SELECT * FROM ledger_fold_account_funds()
     ), compared AS (
       SELECT coalesce(live.account_kind, folded.account_kind) || ':' || coalesce(live.account_id, folded.account_id) AS account,
              column_name, live_value, expected_value
       FROM folded FULL JOIN account_funds_logged live USING (account_kind, account_id)
       CROSS JOIN LATERAL (VALUES
         ('balance_won', live.balance_won, folded.balance_won),
         ('held_won', live.held_won, folded.held_won),
         ('pending_won', live.pending_won, folded.pending_won)) AS pairs(column_name, live_value, expected_value)
     )
     SELECT account, column_name AS column, live_value::text AS live, expected_value::text AS expected
     FROM compared WHERE live_value IS DISTINCT FROM expected_value
     ORDER BY account, column_name`,
  );
  return funds.rows.map((row) => ({
    projection: inlineFundsName,
    table: "account_funds",
    key: row.account,
    kind: "column",
    column: row.column,
    live: row.live ?? "(none)",
    expected: row.expected ?? "(none)",
  }));
}

/** Holds open in the table but not in the fold (unexpected), or the other way round (missing). */
async function openHoldsDifferences(client: Queryable): Promise<ProjectionDifference[]> {
  const holds = await client.query<{ request_id: string; live: boolean }>(
    `WITH folded AS (
       SELECT request_id FROM ledger_fold_open_holds()
     )
     SELECT coalesce(live.request_id, folded.request_id) AS request_id, live.request_id IS NOT NULL AS live
     FROM folded FULL JOIN open_holds live USING (request_id)
     WHERE live.request_id IS NULL OR folded.request_id IS NULL`,
  );
  return holds.rows.map((row) => ({
    projection: inlineFundsName,
    table: "open_holds",
    key: row.request_id,
    kind: row.live ? "unexpected" : "missing",
  }));
}

/** Each key's spend this month, requests this minute and limits that differ from the fold. */
async function keyTablesDifferences(client: Queryable): Promise<ProjectionDifference[]> {
  const keys = await client.query<{
    table: string;
    key: string;
    column: string;
    live: string | null;
    expected: string | null;
  }>(
    `WITH spend AS (
       SELECT 'key_spend' AS table_name, coalesce(live.key_id, folded.key_id)::text || ' ' || coalesce(live.month, folded.month) AS key,
              column_name, live_value, expected_value
       FROM ledger_fold_key_spend() folded FULL JOIN key_spend_logged live USING (key_id, month)
       CROSS JOIN LATERAL (VALUES
         ('held_won', trim_scale(live.held_won)::text, trim_scale(folded.held_won)::text),
         ('pending_won', trim_scale(live.pending_won)::text, trim_scale(folded.pending_won)::text),
         ('charged_won', trim_scale(live.charged_won)::text, trim_scale(folded.charged_won)::text)) AS pairs(column_name, live_value, expected_value)
     ), request_windows AS (
       SELECT 'key_request_windows', coalesce(live.key_id, folded.key_id)::text, column_name, live_value, expected_value
       FROM ledger_fold_key_request_windows() folded FULL JOIN key_request_windows live USING (key_id)
       CROSS JOIN LATERAL (VALUES
         ('window_start', live.window_start::text, folded.window_start::text),
         ('requests', live.requests::text, folded.requests::text)) AS pairs(column_name, live_value, expected_value)
     ), limits AS (
       SELECT 'key_limits', coalesce(live.key_id, folded.key_id)::text, column_name, live_value, expected_value
       FROM ledger_fold_key_limits() folded FULL JOIN key_limits live USING (key_id)
       CROSS JOIN LATERAL (VALUES
         ('monthly_spend_limit_won', trim_scale(live.monthly_spend_limit_won)::text, trim_scale(folded.monthly_spend_limit_won)::text),
         ('total_spend_limit_won', trim_scale(live.total_spend_limit_won)::text, trim_scale(folded.total_spend_limit_won)::text),
         ('rate_limit_requests_per_minute', live.rate_limit_requests_per_minute::text,
          folded.rate_limit_requests_per_minute::text),
         ('allowed_models', live.allowed_models::text, folded.allowed_models::text)) AS pairs(column_name, live_value, expected_value)
     )
     SELECT table_name AS table, key, column_name AS column, live_value AS live, expected_value AS expected
     FROM (SELECT * FROM spend UNION ALL SELECT * FROM request_windows UNION ALL SELECT * FROM limits) compared
     WHERE live_value IS DISTINCT FROM expected_value
     ORDER BY 1, 2, 3`,
  );
  return keys.rows.map((row) => ({
    projection: inlineFundsName,
    table: row.table,
    key: row.key,
    kind: "column",
    column: row.column,
    live: row.live ?? "(none)",
    expected: row.expected ?? "(none)",
  }));
}
