import type pg from "pg";
import { statementMonthsTable } from "../../../projections/monthly-statements";
import { statementLimits } from "../../kernel/limits";
import type { AccountReference } from "../../ledger/events";
import { type BillingHistoryEntry, readBillingHistory } from "../read-models/billing-history";
import { boundsOf, type StatementMonth } from "./statement-month";

/**
 * A month's charges, every account's, in pages: the finance export. Account by account (those the
 * monthly-statements projection holds a charge of in the month), each account's charges in the billing
 * history's order, so every page is an index range scan and no month is ever held in memory whole. The
 * charges are exactly those the month's statements sum: the same rows, by the request's start.
 */

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
      {
        pageSize: statementLimits.exportChargesPageSize,
        rowsMax: statementLimits.exportChargesPerAccountMax,
      },
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
  const pagesMax = Math.ceil(statementLimits.exportAccountsMax / statementLimits.exportAccountsPageSize);
  for (let page = 0; page < pagesMax; page++) {
    const result = await database.query<{ account_kind: AccountReference["kind"]; account_id: string }>(
      `SELECT account_kind, account_id FROM ${statementMonthsTable.name}
       WHERE month = $1 AND charge_count > 0 AND (account_kind, account_id) > ($2, $3)
       ORDER BY account_kind, account_id LIMIT $4`,
      [month, after.kind, after.id, statementLimits.exportAccountsPageSize],
    );
    for (const row of result.rows) {
      after = { kind: row.account_kind, id: row.account_id };
      yield { kind: row.account_kind, id: row.account_id };
    }
    if (result.rows.length < statementLimits.exportAccountsPageSize) return;
  }
}
