import type pg from "pg";

/**
 * Readers that read several projection tables in one snapshot (REPEATABLE READ: a statement, an account as
 * finance sees it, `ledger verify`) lock those tables before their first read. A refold — a definition's
 * version bumped, or `ledger rebuild` — swaps a new table in for each old one (shadow-tables.ts), and a
 * snapshot taken before the swap commits sees none of the new table's rows: the table reads empty, a month
 * of no charges, a balance of nothing. Locked first, the reader's snapshot is taken once the swap has
 * committed, or the swap waits for the reader to end. Both lock in one order (`inLockOrder`), so neither
 * ever waits for the other in a cycle.
 *
 * Must be the transaction's first statement: LOCK takes no snapshot, the first read after it does.
 */
export async function lockTablesBeforeSnapshot(
  client: Pick<pg.ClientBase, "query">,
  tables: readonly string[],
): Promise<void> {
  await client.query(`LOCK TABLE ${inLockOrder(tables).join(", ")} IN ACCESS SHARE MODE`);
}

/** The one order every lock on several projection tables is taken in: by name, each once. */
export function inLockOrder(tables: readonly string[]): string[] {
  return [...new Set(tables)].sort();
}
