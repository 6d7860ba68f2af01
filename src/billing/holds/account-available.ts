import type pg from "pg";
import type { AccountReference } from "../../ledger/events";

/**
 * What the database says an account has available now (C10: balance − pending − open holds), read in one
 * statement from the inline funds: the recheck a refused hold makes before it refuses, since a settlement
 * committed by another process may have been missing from the hold's snapshot. Null: no funds row yet.
 */
export async function readAvailableWon(
  pool: Pick<pg.Pool, "query">,
  account: AccountReference,
): Promise<string | null> {
  const result = await pool.query<{ available_won: string }>({
    name: "account-available-won",
    text: `SELECT balance_won - pending_won - held_won AS available_won FROM account_funds
           WHERE account_kind = $1 AND account_id = $2`,
    values: [account.kind, account.id],
  });
  return result.rows[0]?.available_won ?? null;
}
