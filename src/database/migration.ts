/**
 * One change to the tables or their rows, applied once, in order, and never edited once released: a
 * database anywhere may have applied it as it was. Functions, views and triggers are not migrated — they are
 * declared (declared-schema.ts) and created again whenever their declarations change — so a migration holds
 * only what a declaration cannot: creating, altering or dropping a table, moving rows, and dropping an object
 * that is no longer declared.
 */
export interface Migration {
  id: number;
  name: string;
  sql: string;
  /**
   * Run once the declared functions are in force, in the same transaction: a backfill that needs them
   * (folding the inline read models of a ledger that already has events).
   */
  sqlOnceDeclared?: string;
}
