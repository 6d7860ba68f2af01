import type pg from "pg";
import { balancesTable } from "../../../projections/balances";
import { formatMoney, parseMoney } from "../../kernel/money";
import type { AccountReference } from "../../ledger/events";

/**
 * Balances as the balances projection holds them (what a top-up answers, beside its statements), or with the
 * funds in flight as the ledger holds them at every commit; an account nobody topped up or charged has ₩0.
 */

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

/** An account's money now: its balance, what requests in flight hold, what is pending (not charged yet). */
export interface AccountFunds {
  balanceWon: string;
  heldWon: string;
  pendingWon: string;
}

/**
 * Balance, held and pending from one row of the ledger's inline funds (exact at every commit, C10), so that
 * `available = balance − pending − held` holds in every answer: a charge moves its amount from pending into
 * the balance in one commit, which the balances projection applies only later.
 */
export async function readAccountFunds(
  database: Pick<pg.Pool, "query">,
  account: AccountReference,
): Promise<AccountFunds> {
  const result = await database.query<{ balance_won: string; held_won: string; pending_won: string }>(
    `SELECT balance_won::text AS balance_won, held_won::text AS held_won, pending_won::text AS pending_won
     FROM account_funds WHERE account_kind = $1 AND account_id = $2`,
    [account.kind, account.id],
  );
  const row = result.rows[0];
  return row === undefined
    ? { balanceWon: "0", heldWon: "0", pendingWon: "0" }
    : {
        balanceWon: formatMoney(parseMoney(row.balance_won)),
        heldWon: formatMoney(parseMoney(row.held_won)),
        pendingWon: formatMoney(parseMoney(row.pending_won)),
      };
}
