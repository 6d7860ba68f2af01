import type pg from "pg";
import type { ProjectionDifference } from "./ledger-maintenance";

/**
 * The inline read models kept by the ledger's own trigger (src/database/funds-schema.ts): the accounts'
 * funds and the open holds. They are not projections with checkpoints — every commit keeps them exact —
 * but they are derived all the same, so rebuild recomputes them and verify compares them with a fold.
 */

export const inlineFundsName = "funds (inline)";

/** Folds the whole log into `account_funds` and `open_holds` again, in the caller's transaction. */
export async function recomputeInlineFunds(client: Pick<pg.ClientBase, "query">): Promise<void> {
  await client.query("SELECT ledger_recompute_funds()");
}

/**
 * Compares the live funds with a fold of the log, in the caller's snapshot (run it inside a repeatable-read
 * transaction so the log and the rows are read at one instant).
 */
export async function verifyInlineFunds(
  client: Pick<pg.ClientBase, "query">,
): Promise<ProjectionDifference[]> {
  const funds = await client.query<{
    account: string;
    column: string;
    live: string | null;
    expected: string | null;
  }>(
    `WITH folded AS (
       SELECT data->'account'->>'kind' AS account_kind, data->'account'->>'id' AS account_id,
              sum((ledger_funds_movement(type, data)).balance_won) AS balance_won,
              sum((ledger_funds_movement(type, data)).held_won) AS held_won,
              sum((ledger_funds_movement(type, data)).pending_won) AS pending_won
       FROM ledger_events
       WHERE type IN ('CreditToppedUp', 'UsageAuthorized', 'UsageVoided', 'UsageRecorded', 'UsageCharged')
       GROUP BY 1, 2
     ), compared AS (
       SELECT coalesce(live.account_kind, folded.account_kind) || ':' || coalesce(live.account_id, folded.account_id) AS account,
              column_name, live_value, expected_value
       FROM folded FULL JOIN account_funds live USING (account_kind, account_id)
       CROSS JOIN LATERAL (VALUES
         ('balance_won', live.balance_won, folded.balance_won),
         ('held_won', live.held_won, folded.held_won),
         ('pending_won', live.pending_won, folded.pending_won)) AS pairs(column_name, live_value, expected_value)
     )
     SELECT account, column_name AS column, live_value::text AS live, expected_value::text AS expected
     FROM compared WHERE live_value IS DISTINCT FROM expected_value
     ORDER BY account, column_name`,
  );
  const holds = await client.query<{ request_id: string; live: boolean }>(
    `WITH folded AS (
       SELECT held.data->>'requestId' AS request_id FROM ledger_events held
       WHERE held.type = 'UsageAuthorized'
         AND NOT EXISTS (
           SELECT 1 FROM ledger_events settled
           WHERE settled.stream_id = held.stream_id AND settled.stream_version > held.stream_version
             AND settled.type IN ('UsageRecorded', 'UsageVoided'))
     )
     SELECT coalesce(live.request_id, folded.request_id) AS request_id, live.request_id IS NOT NULL AS live
     FROM folded FULL JOIN open_holds live USING (request_id)
     WHERE live.request_id IS NULL OR folded.request_id IS NULL`,
  );
  return [
    ...funds.rows.map(
      (row): ProjectionDifference => ({
        projection: inlineFundsName,
        table: "account_funds",
        key: row.account,
        kind: "column",
        column: row.column,
        live: row.live ?? "(none)",
        expected: row.expected ?? "(none)",
      }),
    ),
    ...holds.rows.map(
      (row): ProjectionDifference => ({
        projection: inlineFundsName,
        table: "open_holds",
        key: row.request_id,
        kind: row.live ? "unexpected" : "missing",
      }),
    ),
  ];
}
