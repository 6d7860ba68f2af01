import type pg from "pg";
import { balancesTable } from "../../../projections/balances";
import type { AccountReference } from "../../ledger/events";
import { formatMoney, parseMoney } from "../money";

/** Balances as the balances projection holds them; an account nobody topped up or charged has ₩0. */

export const accountStreamIdOf = (account: AccountReference) => `account-${account.kind}-${account.id}`;

export async function readBalanceWon(
  database: Pick<pg.Pool, "query">,
  account: AccountReference,
): Promise<string> {
  const result = await database.query<{ balance_won: string }>(
    `SELECT balance_won::text AS balance_won FROM ${balancesTable.name} WHERE account_kind = $1 AND account_id = $2`,
    [account.kind, account.id],
  );
  const row = result.rows[0];
  return row === undefined ? "0" : formatMoney(parseMoney(row.balance_won));
}
