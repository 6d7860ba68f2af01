import type pg from "pg";
import { keyNamesTable } from "../../../projections/key-lists";

/**
 * The names of keys by id, deleted keys included (the key-lists projection keeps every name it saw issued),
 * so a statement or a usage table names each key beside its id. A key the ledger never issued (ids from
 * before keys were events, or made up by a test) has no name: null, never a guess.
 */
export async function readKeyNames(
  database: Pick<pg.ClientBase, "query">,
  keyIds: readonly string[],
): Promise<Map<string, string>> {
  const unique = [...new Set(keyIds)];
  if (unique.length === 0) return new Map();
  const result = await database.query<{ key_id: string; name: string }>(
    `SELECT key_id, name FROM ${keyNamesTable.name} WHERE key_id = ANY($1::text[])`,
    [unique],
  );
  return new Map(result.rows.map((row) => [row.key_id, row.name]));
}
