import type pg from "pg";

/**
 * Readers that read several projection tables in one snapshot (REPEATABLE READ: a statement, an account as
 * finance sees it, `ledger verify`) lock those tables before their first read. A refold — a definition's
 * version bumped, or `ledger rebuild` — swaps a new table in for each old one (shadow-tables.ts), and a
 * snapshot taken before the swap commits sees none of the new table's rows: the table reads empty, a month
 * of no charges, a balance of nothing. Locked first, the reader's snapshot is taken once the swap has
 * committed, or the swap waits for the reader to end.
 *
 * `tables` in the order the projections define their tables, the order a swap locks them in: then neither
 * ever holds a table the other waits for while waiting for one the other holds.
 *
 * Must be the transaction's first statement: LOCK takes no snapshot, the first read after it does.
 */
export async function lockTablesBeforeSnapshot(
  client: Pick<pg.ClientBase, "query">,
  tables: readonly string[],
): Promise<void> {
  await client.query(`LOCK TABLE ${tables.join(", ")} IN ACCESS SHARE MODE`);
}
