/**
 * The PostgreSQL store's visibility rule, as the SQL every reader of its log filters by: an event is final
 * once its transaction order is below that of the oldest transaction still running (plus the ledger's
 * offset, `offset` being an SQL expression for it), since none of those can commit later and land among
 * what was read. See postgres-event-store.ts.
 */
export function visibleTransactionOrderBelow(offset: string): string {
  return `pg_snapshot_xmin(pg_current_snapshot())::text::bigint + ${offset}`;
}
