import type pg from "pg";
import { webhookEndpointsTable } from "../../../projections/alert-settings";
import { statementMonthsTable } from "../../../projections/monthly-statements";
import { statementLimits, webhookLimits } from "../../kernel/limits";
import { boundsOf, type StatementMonth, statementMonthOf } from "../statements/statement-month";
import { usageUnsettledCondition } from "../statements/unsettled-usage";

/**
 * `statement.closed` (C14): once a month's statement is final, as monthly-statement.ts decides it (the month
 * and its settlement grace are over, and no request started in it has usage uncharged or a hold open), each
 * endpoint of the account subscribed to it gets one message for that month (dedupe key: the month). Found by
 * the workers' periodic pass, never on the request path. The month looked at is the one before `now`'s; an
 * account whose month is not final yet is found by a later pass.
 */

/** The Seoul month before the one `now` falls in. */
export function previousMonthOf(now: Date): StatementMonth {
  return statementMonthOf(new Date(boundsOf(statementMonthOf(now)).start.getTime() - 1));
}

/**
 * One pass: for up to `accountsMax` accounts with a statement for the month before `now`'s (any month up to
 * it in the statements projection), a subscribed endpoint not yet told, and that month final, writes the
 * messages. Answers the messages written.
 */
export async function detectClosedStatements(
  database: Pick<pg.Pool, "query">,
  now: Date,
  accountsMax: number = webhookLimits.statementCheckAccountsMax,
): Promise<number> {
  const month = previousMonthOf(now);
  const { start, end } = boundsOf(month);
  if (now.getTime() < end.getTime() + statementLimits.settlementGraceMs) return 0;
  const result = await database.query(
    `WITH due AS (
       SELECT DISTINCT endpoint.account_kind, endpoint.account_id
       FROM ${webhookEndpointsTable.name} endpoint
       WHERE endpoint.events::jsonb ? 'statement.closed'
         AND NOT EXISTS (SELECT 1 FROM webhook_deliveries delivery
           WHERE delivery.webhook_id = endpoint.webhook_id AND delivery.dedupe_key = $1)
         AND EXISTS (SELECT 1 FROM ${statementMonthsTable.name} statement
           WHERE statement.account_kind = endpoint.account_kind AND statement.account_id = endpoint.account_id
             AND statement.month <= $1)
         AND NOT ${usageUnsettledCondition({
           account: { kind: "endpoint.account_kind", id: "endpoint.account_id" },
           monthEnd: "$2::timestamptz",
           month: "$1",
         })}
       ORDER BY endpoint.account_kind, endpoint.account_id LIMIT $3)
     INSERT INTO webhook_deliveries (delivery_id, webhook_id, event_type, body, dedupe_key)
     SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), endpoint.webhook_id, 'statement.closed',
       json_build_object('type', 'statement.closed', 'timestamp', $4::text, 'data', json_build_object(
         'account', json_build_object('kind', due.account_kind, 'id', due.account_id),
         'month', $1::text, 'from', $5::text, 'to', $6::text))::text, $1
     FROM due JOIN ${webhookEndpointsTable.name} endpoint ON endpoint.account_kind = due.account_kind
       AND endpoint.account_id = due.account_id AND endpoint.events::jsonb ? 'statement.closed'
     ON CONFLICT (webhook_id, dedupe_key) DO NOTHING`,
    [month, end.toISOString(), accountsMax, now.toISOString(), start.toISOString(), end.toISOString()],
  );
  return result.rowCount ?? 0;
}
