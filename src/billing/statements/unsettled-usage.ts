import { pendingChargesTable } from "../../../projections/balances";
import { requestHoldsTable } from "../../ledger/schema/holds/request-holds";
import { sweptHoldReservesTable } from "../../ledger/schema/holds/swept-hold-reserves";
import { openHoldsTable } from "../../ledger/schema/inline-funds/open-holds";

/**
 * Whether an account has a request started before a month's end that is not yet final: its usage recorded
 * but not charged (a pending charge), its hold still open (a stream may run for STREAM_DEADLINE_MS, longer
 * than the grace after the month, and a dead gateway's hold waits for the sweep), its hold row not yet logged,
 * or its hold swept while its gateway lived, whose correction may still come (swept_hold_reserves, by the
 * Seoul month its request started in). Any keeps the month's statement provisional, whatever the clock says.
 *
 * One SQL condition, for the statement (monthly-statement.ts) and for `statement.closed`
 * (statement-closed-alerts.ts) alike: each argument is an SQL expression (a column or a parameter), the month
 * end a timestamptz and the month its `YYYY-MM` text.
 */
export function usageUnsettledCondition(sql: {
  accountKind: string;
  accountId: string;
  monthEnd: string;
  month: string;
}): string {
  const ofAccount = (table: string) =>
    `${table}.account_kind = ${sql.accountKind} AND ${table}.account_id = ${sql.accountId}`;
  return `(
    EXISTS (SELECT FROM ${pendingChargesTable.name} pending
            WHERE ${ofAccount("pending")} AND pending.started_at < ${sql.monthEnd})
    OR EXISTS (SELECT FROM ${openHoldsTable.name} open_hold
               WHERE ${ofAccount("open_hold")} AND open_hold.placed_at < ${sql.monthEnd})
    OR EXISTS (SELECT FROM ${requestHoldsTable.name} request_hold
               WHERE ${ofAccount("request_hold")} AND request_hold.started_at < ${sql.monthEnd})
    OR EXISTS (SELECT FROM ${sweptHoldReservesTable.name} reserve
               WHERE ${ofAccount("reserve")} AND reserve.month <= ${sql.month} AND reserve.reserved_until > now())
  )`;
}
