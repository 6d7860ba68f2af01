import type pg from "pg";
import type { Logger } from "pino";
import { migrate } from "../../database/migrations";
import { createPool } from "../../database/pool";
import { limits } from "../../kernel/limits";
import { ledgerSchema } from "../schema/ledger-schema";
import type { EventStore } from "./event-store";
import { EventStoreDbEventStore } from "./eventstoredb-event-store";
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
}): Promise<Ledger> {
  const pool = createPool({
    url: options.databaseUrl,
    connectionsMax: options.connectionsMax ?? limits.databaseConnectionsMax,
    applicationName: options.applicationName,
  });
  try {
    await migrate(pool, ledgerSchema.objects);
    const store: EventStore = options.eventStoreUrl
      ? new EventStoreDbEventStore(options.eventStoreUrl)
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
