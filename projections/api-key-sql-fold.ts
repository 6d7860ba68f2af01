import type { FoldTarget, TableDefinition } from "../src/ledger/projection/projection";
import { otherEventRows } from "../src/ledger/rebuild/parsed-events";

/**
 * The SQL folds of the two key projections share how a chunk's status changes and deletions apply: a key's
 * events are its own stream (issued, then status changes, then at most a deletion), so after the chunk's
 * issues are inserted, each key takes its latest status change in the chunk, and deleted keys go.
 */
export function apiKeyChangeStatements(table: TableDefinition, into: FoldTarget): string[] {
  const target = into(table);
  return [
    `UPDATE ${target} stored SET status = changed.status
     FROM (SELECT DISTINCT ON (key_id) key_id, status FROM ${otherEventRows.table}
           WHERE type = 'ApiKeyStatusChanged'
           ORDER BY key_id, transaction_order DESC, position DESC) changed
     WHERE stored.key_id = changed.key_id`,
    `DELETE FROM ${target} stored USING ${otherEventRows.table} deleted
     WHERE deleted.type = 'ApiKeyDeleted' AND stored.key_id = deleted.key_id`,
  ];
}

/** The chunk's issued keys, the latest issue of a key ID winning (as `put` replaces a row). */
export function issuedKeysSelect(columns: string): string {
  return `SELECT DISTINCT ON (key_id) ${columns} FROM ${otherEventRows.table} WHERE type = 'ApiKeyIssued'
          ORDER BY key_id, transaction_order DESC, position DESC`;
}
