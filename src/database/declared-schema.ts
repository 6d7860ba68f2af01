import { createHash } from "node:crypto";
import type pg from "pg";

/**
 * The schema as declared: one definition in force per database object, each in its own file beside the
 * layer that owns it (src/ledger/schema/). Two kinds, because they change differently:
 *
 * - A table holds rows, so it changes only through a numbered migration (src/database/migrations/). Its
 *   declaration is what those migrations produce; the catalog test holds them to it.
 * - A function, view or trigger holds nothing, so it is never migrated: whenever the declarations change,
 *   `migrate` (migrations.ts) drops them all and creates them again from their declarations.
 */
export interface DeclaredTable {
  kind: "table";
  name: string;
  /** CREATE TABLE with its columns in the order the migrations leave them, and its indexes. */
  sql: string;
}

export interface DeclaredFunction {
  kind: "function";
  name: string;
  sql: string;
}

export interface DeclaredView {
  kind: "view";
  name: string;
  sql: string;
}

export interface DeclaredTrigger {
  kind: "trigger";
  name: string;
  table: string;
  sql: string;
}

export type DeclaredObject = DeclaredFunction | DeclaredView | DeclaredTrigger;

export interface DeclaredSchema {
  /** In an order they can be created in. */
  tables: readonly DeclaredTable[];
  /** In dependency order: each after what it calls or reads (they are dropped in the reverse order). */
  objects: readonly DeclaredObject[];
}

/** A fingerprint of the declared objects: when it differs from the one last applied, they are created again. */
export function declaredObjectsDigest(objects: readonly DeclaredObject[]): string {
  return createHash("sha256").update(JSON.stringify(objects)).digest("hex");
}

/**
 * Drops every declared object that exists under its name, whatever its signature (a function whose result
 * changed cannot be replaced, only dropped), dependents first. Never CASCADE: a dependency nobody declared
 * stops the migration instead of vanishing.
 */
export async function dropDeclaredObjects(
  client: Pick<pg.ClientBase, "query">,
  objects: readonly DeclaredObject[],
): Promise<void> {
  for (const object of [...objects].reverse()) {
    switch (object.kind) {
      case "trigger":
        await client.query(`DROP TRIGGER IF EXISTS ${object.name} ON ${object.table}`);
        break;
      case "view": {
        // Only a view: before the migration that turned it into one, the name may be a table's.
        const view = await client.query(
          `SELECT 1 FROM pg_class WHERE relname = $1 AND relkind = 'v' AND relnamespace = current_schema()::regnamespace`,
          [object.name],
        );
        if (view.rowCount) await client.query(`DROP VIEW ${object.name}`);
        break;
      }
      case "function": {
        const signatures = await client.query<{ signature: string }>(
          `SELECT oid::regprocedure::text AS signature FROM pg_proc
           WHERE proname = $1 AND pronamespace = current_schema()::regnamespace`,
          [object.name],
        );
        for (const { signature } of signatures.rows) await client.query(`DROP FUNCTION ${signature}`);
        break;
      }
      default: {
        const unknown: never = object;
        throw new Error(`unknown declared object ${JSON.stringify(unknown)}`);
      }
    }
  }
}

/** Creates every declared object, in declaration order. */
export async function createDeclaredObjects(
  client: Pick<pg.ClientBase, "query">,
  objects: readonly DeclaredObject[],
): Promise<void> {
  for (const object of objects) await client.query(object.sql);
}
