import type pg from "pg";
import { balancesProjection, pendingChargesTable } from "../../../projections/balances";
import { statementLimits } from "../../kernel/limits";
import type { AccountReference } from "../../ledger/events";
import { requestHoldsTable } from "../../ledger/schema/holds/request-holds";
import { sweptHoldReservesTable } from "../../ledger/schema/holds/swept-hold-reserves";
import { openHoldsTable } from "../../ledger/schema/inline-funds/open-holds";
import { ledgerEventsTable } from "../../ledger/schema/ledger-events";
import { projectionCheckpointsTable } from "../../ledger/schema/projection-checkpoints";
import { boundsOf, type StatementMonth } from "./statement-month";

/**
 * Whether an account has a request started before a month's end that is not yet final: its usage recorded
 * but not charged (a pending charge), its hold still open (a stream may run for STREAM_DEADLINE_MS, longer
 * than the grace after the month, and a dead gateway's hold waits for the sweep), its hold row not yet logged,
 * or its hold swept while its gateway lived, whose correction may still come (swept_hold_reserves, by the
 * Seoul month its request started in). Any keeps the month's statement provisional, whatever the clock says.
 * A usage the log holds but the pending charges do not yet (its hold row is logged, and deleted, in the
 * commit that appends it; the projections fold it a moment later) is found in the log past their checkpoint:
 * a short tail, read by the log's key. (On EventStoreDB the log is not in these tables; the tail is empty.)
 *
 * One SQL condition, for the statement (monthly-statement.ts), the finance export and `statement.closed`
 * (statement-closed-alerts.ts) alike: each argument is an SQL expression (a column or a parameter), the month
 * end a timestamptz and the month its `YYYY-MM` text; without an account, any account's usage counts.
 */
export function usageUnsettledCondition(sql: {
  account: { kind: string; id: string } | undefined;
  monthEnd: string;
  month: string;
}): string {
  const { account } = sql;
  const ofAccount = (table: string) =>
    account === undefined
      ? "TRUE"
      : `${table}.account_kind = ${account.kind} AND ${table}.account_id = ${account.id}`;
  const usageOfAccount =
    account === undefined
      ? "TRUE"
      : `tail.data->'account'->>'kind' = ${account.kind} AND tail.data->'account'->>'id' = ${account.id}`;
  return `(
    EXISTS (SELECT FROM ${pendingChargesTable.name} pending
            WHERE ${ofAccount("pending")} AND pending.started_at < ${sql.monthEnd})
    OR EXISTS (SELECT FROM ${openHoldsTable.name} open_hold
               WHERE ${ofAccount("open_hold")} AND open_hold.placed_at < ${sql.monthEnd})
    OR EXISTS (SELECT FROM ${requestHoldsTable.name} request_hold
               WHERE ${ofAccount("request_hold")} AND request_hold.started_at < ${sql.monthEnd})
    OR EXISTS (SELECT FROM ${sweptHoldReservesTable.name} reserve
               WHERE ${ofAccount("reserve")} AND reserve.month <= ${sql.month} AND reserve.reserved_until > now())
    OR EXISTS (SELECT FROM ${projectionCheckpointsTable.name} folded
               JOIN ${ledgerEventsTable.name} tail
                 ON (tail.transaction_order, tail.position) > (folded.commit_position, folded.prepare_position)
               WHERE folded.projection = '${balancesProjection.name}' AND tail.type = 'UsageRecorded'
                 AND ${usageOfAccount} AND (tail.data->>'startedAt')::timestamptz < ${sql.monthEnd})
  )`;
}

/**
 * Whether a month may still change — for one account's statement, or for every account's (the finance
 * export): until its end and the settlement grace after it are over, and after that while usage started in
 * it is unsettled.
 */
export async function isMonthProvisional(
  client: Pick<pg.ClientBase, "query">,
  month: StatementMonth,
  now: Date,
  account: AccountReference | undefined,
): Promise<boolean> {
  const { end } = boundsOf(month);
  if (now.getTime() < end.getTime() + statementLimits.settlementGraceMs) return true;
  const condition = usageUnsettledCondition({
    account: account === undefined ? undefined : { kind: "$3", id: "$4" },
    monthEnd: "$1::timestamptz",
    month: "$2",
  });
  const values = [end.toISOString(), month, ...(account === undefined ? [] : [account.kind, account.id])];
  const unsettled = await client.query<{ unsettled: boolean }>(`SELECT ${condition} AS unsettled`, values);
  return unsettled.rows[0]!.unsettled;
}
