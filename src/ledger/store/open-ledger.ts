import type pg from "pg";
import type { Logger } from "pino";
import { migrate, schemaShortfallOf } from "../../database/migrations";
import { createPool } from "../../database/pool";
import { limits } from "../../kernel/limits";
import { ledgerSchema } from "../schema/ledger-schema";
import type { EventStore } from "./event-store";
import { PostgresEventStore } from "./postgres-event-store";

export interface Ledger {
  pool: pg.Pool;
  store: EventStore;
  databaseUrl: string;
  close(): Promise<void>;
}

/**
 * Connects the ledger: PostgreSQL for projections and checkpoints (migrated on open), and for events
 * unless an EventStoreDB URL is given.
 */
export async function openLedger(options: {
  databaseUrl: string;
  eventStoreUrl?: string | undefined;
  applicationName: string;
  connectionsMax?: number;
  /** Reports of the LISTEN connection (lost, restored). */
  logger?: Logger;
  /**
   * "migrate" (the service): bring the schema to this release's. "as-found" (the ledger command): change
   * nothing, and refuse a database whose schema is not this release's (LedgerSchemaError).
   */
  schema?: "migrate" | "as-found";
}): Promise<Ledger> {
  const pool = createPool({
    url: options.databaseUrl,
    connectionsMax: options.connectionsMax ?? limits.databaseConnectionsMax,
    applicationName: options.applicationName,
  });
  try {
    if (options.schema === "as-found") {
      await connectOnce(pool, options.databaseUrl);
      const shortfall = await schemaShortfallOf(pool, ledgerSchema.objects);
      if (shortfall !== undefined)
        throw new LedgerSchemaError(
          `${databaseNameOf(options.databaseUrl)} ${shortfall}: start this release's service on it first (it migrates the schema); this command changes nothing`,
        );
    } else await migrate(pool, ledgerSchema.objects);
    const store: EventStore = options.eventStoreUrl
      ? await eventStoreDbAt(options.eventStoreUrl)
      : await PostgresEventStore.open({
          pool,
          listenConnectionString: options.databaseUrl,
          pollIntervalMs: limits.eventStorePollIntervalMs,
          logger: options.logger,
        });
    return {
      pool,
      store,
      databaseUrl: options.databaseUrl,
      close: async () => {
        await store.close();
        await pool.end();
      },
    };
  } catch (error) {
    await pool.end().catch(() => {});
    throw error;
  }
}

/**
 * The EventStoreDB adapter, loaded only when asked for: its client (gRPC, protobuf, OpenTelemetry) is some
 * 450 modules and most of a second of every start, command or service, that stores its events in PostgreSQL.
 */
async function eventStoreDbAt(url: string): Promise<EventStore> {
  const { EventStoreDbEventStore } = await import("./eventstoredb-event-store");
  return new EventStoreDbEventStore(url);
}

/** A database whose schema a command that changes nothing cannot read as it stands. */
export class LedgerSchemaError extends Error {
  override readonly name = "LedgerSchemaError";
}

/**
 * A first connection, for a command: one that fails says which database it could not reach, in one line,
 * where the driver's words name none (or, with no password to give, speak of SCRAM's messages).
 */
async function connectOnce(pool: pg.Pool, databaseUrl: string): Promise<void> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    const reason = (error as Error).message;
    throw new Error(
      reason.includes("client password must be a string")
        ? `${databaseNameOf(databaseUrl)} asks for a password, and DATABASE_URL gives none; this command changes nothing`
        : `cannot connect to ${databaseNameOf(databaseUrl)}: ${reason}; this command changes nothing`,
    );
  }
  client.release();
}

/** Host, port and database of a URL, never its credentials: what a message may name. */
function databaseNameOf(databaseUrl: string): string {
  try {
    const url = new URL(databaseUrl);
    return `the database ${url.pathname.slice(1) || "postgres"} at ${url.hostname}:${url.port || "5432"}`;
  } catch {
    return "the database";
  }
}
