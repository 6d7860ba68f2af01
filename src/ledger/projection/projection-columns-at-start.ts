import { setTimeout as sleep } from "node:timers/promises";
import type pg from "pg";
import { isLockNotAvailable, lockTimeoutSettingOf } from "../../database/lock-wait";
import type { TableDefinition } from "./projection";
import { missingColumnStatements } from "./projection-tables";

/**
 * Adds the columns the projections gained (missingColumnStatements), as a worker starts, before it charges
 * or may lead: a worker of a new release may then read the tables while an earlier release's still leads.
 * Each ALTER is a transaction of its own that waits at most `lockWaitMs` for its table: a waiting ALTER
 * queues every reader of the table behind it, so one held up by a long transaction (a refold, a rebuild)
 * gives way and tries again after as long, up to `attemptsMax` times, then stops the start naming the table.
 */
export async function addMissingColumnsAtStart(
  pool: pg.Pool,
  tables: readonly TableDefinition[],
  options: { lockWaitMs: number; attemptsMax: number },
): Promise<void> {
  for (const statement of await missingColumnStatements(pool, tables)) {
    for (let attempt = 1; ; attempt++) {
      const client = await pool.connect();
      try {
        await client.query("BEGIN");
        await client.query(`SET LOCAL lock_timeout = ${lockTimeoutSettingOf(options.lockWaitMs)}`);
        await client.query(statement);
        await client.query("COMMIT");
        break;
      } catch (error) {
        await client.query("ROLLBACK").catch(() => {});
        if (!isLockNotAvailable(error)) throw error;
        if (attempt >= options.attemptsMax) {
          throw new Error(
            `could not take the table for "${statement}" in ${options.attemptsMax} tries: a long transaction holds it`,
          );
        }
      } finally {
        client.release();
      }
      await sleep(options.lockWaitMs);
    }
  }
}
