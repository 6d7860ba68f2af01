import type pg from "pg";
import { balancesTable } from "../../../projections/balances";
import { formatMoney, parseMoney } from "../../kernel/money";
import type { AccountReference } from "../../ledger/events";

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

/** What an account's money is doing right now: held by requests in flight and pending (recorded, not charged). */
export interface AccountFundsInFlight {
  heldWon: string;
  pendingWon: string;
}

/**
 * Held and pending from the ledger's inline funds (exact at every commit, C10), beside the balance the
 * balances projection gives: `available = balance − pending − held`.
 */
export async function readFundsInFlight(
  database: Pick<pg.Pool, "query">,
  account: AccountReference,
): Promise<AccountFundsInFlight> {
  const result = await database.query<{ held_won: string; pending_won: string }>(
    `SELECT held_won::text AS held_won, pending_won::text AS pending_won FROM account_funds
     WHERE account_kind = $1 AND account_id = $2`,
    [account.kind, account.id],
  );
  const row = result.rows[0];
  return row === undefined
    ? { heldWon: "0", pendingWon: "0" }
    : {
        heldWon: formatMoney(parseMoney(row.held_won)),
        pendingWon: formatMoney(parseMoney(row.pending_won)),
      };
}
