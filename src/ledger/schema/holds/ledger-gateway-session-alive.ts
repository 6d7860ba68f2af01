import { advisoryLockKeys } from "../../../database/advisory-lock-keys";
import type { DeclaredFunction } from "../../../database/declared-schema";

/**
 * Whether a gateway process still has its session (src/billing/holds/gateway-session.ts): the advisory lock
 * it takes on a connection of its own at start and holds for its life. PostgreSQL frees the lock as soon as
 * the process's connection closes — it died, or stopped — but not while the process is paused, or cut off
 * without its connection being closed: a gateway without its session can no longer deliver anything, nor
 * bill what it delivered. Two-key advisory locks show in `pg_locks` with `objsubid` 2, the keys as unsigned
 * oids.
 */
export const ledgerGatewaySessionAliveFunction: DeclaredFunction = {
  kind: "function",
  name: "ledger_gateway_session_alive",
  sql: `
    CREATE OR REPLACE FUNCTION ledger_gateway_session_alive(instance text) RETURNS boolean
    LANGUAGE sql STABLE AS $$
      SELECT EXISTS (
        SELECT 1 FROM pg_locks locks
        WHERE locks.locktype = 'advisory' AND locks.granted AND locks.objsubid = 2
          AND locks.database = (SELECT oid FROM pg_database WHERE datname = current_database())
          AND locks.classid = ${advisoryLockKeys.gatewaySession}::oid
          AND locks.objid = (hashtext(instance)::bigint & 4294967295)::oid)
    $$;
  `,
};
