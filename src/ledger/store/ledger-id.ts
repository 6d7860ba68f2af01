import pg from "pg";
import { migrate } from "../../database/migrations";
import { createPool } from "../../database/pool";
import { assert } from "../../kernel/assert";
import { ledgerSchema } from "../schema/ledger-schema";
import { LedgerSchemaError } from "./open-ledger";

/**
 * The ledger's id: a uuid drawn once, by migration 31, and kept in its one settings row. Every process of a
 * deployment reads the same value, whatever host name it reaches the database by (a pooler, an address, a
 * service name); a restored backup or a promoted replica keeps it; any other ledger — on another server,
 * whatever its database is called — has its own. It names what the deployment keeps outside its database:
 * its queues on Redis (queue-backend.ts).
 */
export async function readLedgerId(database: Pick<pg.Pool, "query">): Promise<string> {
  const { rows } = await database.query<{ ledger_id: string }>("SELECT ledger_id::text FROM ledger_settings");
  assert(rows.length === 1, `ledger_settings holds one row, not ${rows.length}`);
  return rows[0]!.ledger_id;
}

/** SQLSTATE: a table or a column the statement names does not exist (a database before migration 31). */
const undefinedObjectCodes = new Set(["42P01", "42703"]);

/**
 * The id of the ledger at `databaseUrl`, read once on a connection of its own. `migrate`: its schema brought
 * to this release's first, as the service's start does. `as-found`: a database without one is refused.
 */
export async function ledgerIdAt(
  databaseUrl: string,
  options: { applicationName: string; schema: "migrate" | "as-found" },
): Promise<string> {
  const pool = createPool({ url: databaseUrl, connectionsMax: 1, applicationName: options.applicationName });
  try {
    if (options.schema === "migrate") await migrate(pool, ledgerSchema.objects);
    return await readLedgerId(pool);
  } catch (error) {
    if (error instanceof pg.DatabaseError && undefinedObjectCodes.has(error.code ?? ""))
      throw new LedgerSchemaError(
        "the database holds no ledger id: start this release's service on it first (it migrates the schema)",
      );
    throw error;
  } finally {
    await pool.end();
  }
}
