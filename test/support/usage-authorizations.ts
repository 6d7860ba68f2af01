import type pg from "pg";
import { PostgresUsageAuthorizations } from "../../src/billing/holds/postgres-usage-authorizations";
import type { EventStore } from "../../src/ledger/store/event-store";
import { PostgresEventStore } from "../../src/ledger/store/postgres-event-store";

/** The holds port on a test's ledger, as the service wires it (service.ts). */
export function usageAuthorizationsOf(
  pool: Pick<pg.Pool, "query">,
  store: EventStore,
): PostgresUsageAuthorizations {
  if (!(store instanceof PostgresEventStore)) throw new Error("holds need the PostgreSQL event store");
  return new PostgresUsageAuthorizations(pool);
}
