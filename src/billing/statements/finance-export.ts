import type pg from "pg";
import { statementMonthsTable } from "../../../projections/monthly-statements";
import type { AccountReference } from "../../ledger/events";
import { type BillingHistoryEntry, readBillingHistory } from "../read-models/billing-history";
import { boundsOf, type StatementMonth } from "./statement-month";

/**
 * A month's charges, every account's, in pages: the finance export. Account by account (those the
 * monthly-statements projection holds a charge of in the month), each account's charges in the billing
 * history's order, so every page is an index range scan and no month is ever held in memory whole. The
 * charges are exactly those the month's statements sum: the same rows, by the request's start.
 */

export const financeExportLimits = {
  /** Accounts read per query while walking the month's accounts. */
  accountsPageSize: 500,
  /** Charges per page read from the billing history (and written to the client before the next read). */
  chargesPageSize: 1_000,
  /** Bound on one account's charges in one month: far beyond any real month, so a loop cannot run away. */
  chargesPerAccountMax: 100_000_000,
  /** Bound on the accounts with charges in one month. */
  accountsMax: 100_000_000,
} as const;

export async function* readMonthCharges(
  database: Pick<pg.Pool, "query">,
  month: StatementMonth,
  account: AccountReference | undefined,
): AsyncGenerator<BillingHistoryEntry[]> {
  const { start, end } = boundsOf(month);
  const accounts = account === undefined ? accountsChargedIn(database, month) : single(account);
  for await (const charged of accounts) {
    yield* readBillingHistory(
      database,
      { account: charged, from: start, to: end },
      { pageSize: financeExportLimits.chargesPageSize, rowsMax: financeExportLimits.chargesPerAccountMax },
    );
  }
}

async function* single(account: AccountReference): AsyncGenerator<AccountReference> {
  yield account;
}

async function* accountsChargedIn(
  database: Pick<pg.Pool, "query">,
  month: StatementMonth,
): AsyncGenerator<AccountReference> {
  let after: { kind: string; id: string } = { kind: "", id: "" };
  const pagesMax = Math.ceil(financeExportLimits.accountsMax / financeExportLimits.accountsPageSize);
  for (let page = 0; page < pagesMax; page++) {
    const result = await database.query<{ account_kind: AccountReference["kind"]; account_id: string }>(
      `SELECT account_kind, account_id FROM ${statementMonthsTable.name}
       WHERE month = $1 AND charge_count > 0 AND (account_kind, account_id) > ($2, $3)
       ORDER BY account_kind, account_id LIMIT $4`,
      [month, after.kind, after.id, financeExportLimits.accountsPageSize],
    );
    for (const row of result.rows) {
      after = { kind: row.account_kind, id: row.account_id };
      yield { kind: row.account_kind, id: row.account_id };
    }
    if (result.rows.length < financeExportLimits.accountsPageSize) return;
  }
}
