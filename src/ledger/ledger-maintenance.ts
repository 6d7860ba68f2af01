import { createHash } from "node:crypto";
import type pg from "pg";
import { advisoryLockKeys } from "../database/advisory-lock-keys";
import { withHeldConnection } from "../database/held-connection";
import { inOneTransaction } from "../database/in-one-transaction";
import { limits } from "../kernel/limits";
import { Money } from "../kernel/money";
import { recomputeInlineFunds } from "./inline-funds";
import { type BrokenChains, brokenChainLinks } from "./integrity/broken-chain-links";
import type { ProjectionDefinition } from "./projection/projection";
import { rebuildInMemory } from "./rebuild/rebuild-in-memory";
import { rebuildInSql, sqlFoldsOf } from "./rebuild/rebuild-in-sql";
import type { EventStore } from "./store/event-store";
import type { LogPosition } from "./store/log-position";

/**
 * Operations behind `npm run ledger -- …`: rebuild projections from the log, and the balances checksum that
 * shows a rebuild changed no balance. Verifying them against the log is verify-projections.ts.
 */

export interface LedgerMaintenanceContext {
  pool: pg.Pool;
  store: EventStore;
  projections: readonly ProjectionDefinition[];
}

export type RebuildProgress = (appliedEvents: number) => void;

/**
 * How a rebuild folds the log: by the projections' SQL folds inside PostgreSQL (the default where the
 * events are in PostgreSQL and every projection has one), or by their TypeScript folds in memory.
 */
export type RebuildFold = "sql" | "memory";

/**
 * A log whose hash chains do not hold, which a rebuild refuses to fold (unless told to fold it as it
 * stands): the live projections were folded from the events as they were written, and a rebuild would
 * replace them with a fold of the altered ones — the balances a forged top-up inflates among them.
 */
export class BrokenChainsError extends Error {
  override readonly name = "BrokenChainsError";
  constructor(readonly chains: BrokenChains) {
    super(`the hash chains of ${chains.brokenCount} stream(s) of the log do not hold`);
  }
}

/** Broken links a refused rebuild names (the rest are counted): as many as `ledger verify` names. */
const brokenLinksNamedMax = 100;

/**
 * Drops every projection's rows and folds the whole log again, in one transaction. A running service's
 * projection runner is disconnected (it stands by and resumes from the rebuilt checkpoints when the rebuild
 * releases the lock); its readers see the old projections until the rebuild commits.
 */
export async function rebuildProjections(
  context: LedgerMaintenanceContext,
  options: {
    batchSizeMax: number;
    /** Rows the fold keeps in memory before writing them out: with the page size, what bounds memory. */
    rowsInMemoryMax?: number;
    /** Events per chunk of a rebuild in SQL: progress is reported after each. */
    chunkEventsMax?: number;
    fold?: RebuildFold;
    /**
     * Every stream's hash chain is checked first, before anything changes (the PostgreSQL store's
     * only: EventStoreDB keeps them in metadata, unchecked). "refuse" (the default): where one does not hold,
     * change nothing (BrokenChainsError). "fold": fold the log as it stands, and answer what was found.
     */
    brokenChains?: "refuse" | "fold";
    onProgress?: RebuildProgress;
  },
): Promise<{
  eventCount: number;
  checksum: BalanceChecksum;
  fold: RebuildFold;
  brokenChains?: BrokenChains;
}> {
  const inSql = context.store.kind === "postgresql" && sqlFoldsOf(context.projections) !== undefined;
  const fold = options.fold ?? (inSql ? "sql" : "memory");
  if (fold === "sql" && !inSql)
    throw new Error("a rebuild in SQL needs the PostgreSQL store and an SQL fold for every projection");
  const onProgress = options.onProgress ? { onProgress: options.onProgress } : {};
  return withHeldConnection(context.pool, async (client, isLost) => {
    try {
      // Before the runner's lock is taken: a rebuild refused disturbs no running service.
      const chains =
        context.store.kind === "postgresql"
          ? await inOneTransaction(client, () => brokenChainLinks(client, brokenLinksNamedMax))
          : undefined;
      if (chains && chains.brokenCount > 0 && options.brokenChains !== "fold")
        throw new BrokenChainsError(chains);
      await takeRunnerLock(client);
      // One transaction: until the rebuild commits, every reader keeps seeing the projections as they were.
      return await inOneTransaction(client, async () => {
        // The read models kept inline by the ledger's own trigger (funds, open holds), in this transaction,
        // before the projections' tables are swapped in: a hold locks its accounts' funds rows, then reads
        // the active keys, so the rebuild takes those rows before the tables too. Holding the swapped tables
        // while it waited for a hold's row, it would deadlock with that hold, and one of the two would fail.
        const recomputeFunds = (foldedUpTo?: bigint) => recomputeInlineFunds(client, foldedUpTo);
        // A rebuild in SQL folds the inline read models' money from its chunks as well.
        const rebuilt: { eventCount: number; last: LogPosition } =
          fold === "sql"
            ? await rebuildInSql(client, context.projections, {
                chunkEventsMax: options.chunkEventsMax ?? limits.rebuildChunkEventsMax,
                foldInlineFunds: true,
                beforeSwap: recomputeFunds,
                ...onProgress,
              })
            : await rebuildInMemory(client, context.store, context.projections, {
                pageSizeMax: options.batchSizeMax,
                rowsInMemoryMax: options.rowsInMemoryMax ?? limits.rebuildRowsInMemoryMax,
                beforeSwap: () => recomputeFunds(),
                ...onProgress,
              });
        await writeRebuiltCheckpoints(client, context.projections, rebuilt.last);
        return {
          eventCount: rebuilt.eventCount,
          checksum: await balanceChecksum(client),
          fold,
          ...(chains && chains.brokenCount > 0 ? { brokenChains: chains } : {}),
        };
      });
    } finally {
      if (!isLost()) await client.query("SELECT pg_advisory_unlock_all()").catch(() => {});
    }
  });
}

async function writeRebuiltCheckpoints(
  client: pg.ClientBase,
  projections: readonly ProjectionDefinition[],
  last: LogPosition,
): Promise<void> {
  await client.query(
    `INSERT INTO projection_checkpoints (projection, definition_version, commit_position, prepare_position)
     SELECT * FROM unnest($1::text[], $2::integer[], $3::bigint[], $4::bigint[])
     ON CONFLICT (projection) DO UPDATE
     SET definition_version = EXCLUDED.definition_version, commit_position = EXCLUDED.commit_position,
         prepare_position = EXCLUDED.prepare_position, updated_at = now()`,
    [
      projections.map((projection) => projection.name),
      projections.map((projection) => projection.version),
      projections.map(() => String(last.commit)),
      projections.map(() => String(last.prepare)),
    ],
  );
}

/** Takes the runner lock, disconnecting a live runner that holds it. */
async function takeRunnerLock(client: pg.PoolClient): Promise<void> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const locked = await client.query<{ locked: boolean }>("SELECT pg_try_advisory_lock($1) AS locked", [
      advisoryLockKeys.projectionRunner,
    ]);
    if (locked.rows[0]?.locked) return;
    await client.query(
      `SELECT pg_terminate_backend(pid) FROM pg_locks
       WHERE locktype = 'advisory' AND objid = $1 AND granted AND pid <> pg_backend_pid()
         AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
      [advisoryLockKeys.projectionRunner],
    );
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error("could not take the projection runner lock");
}

export interface BalanceChecksum {
  sha256: string;
  accountCount: number;
  totalWon: string;
}

/** A digest of every balance, stable across rebuilds: equal checksums mean equal balances. */
export async function balanceChecksum(client: Pick<pg.ClientBase, "query">): Promise<BalanceChecksum> {
  const result = await client.query<{ account_kind: string; account_id: string; balance_won: string }>(
    "SELECT account_kind, account_id, balance_won FROM projection_balances ORDER BY account_kind, account_id",
  );
  const hash = createHash("sha256");
  let total = new Money(0);
  for (const row of result.rows) {
    const balance = new Money(row.balance_won);
    total = total.plus(balance);
    hash.update(`${row.account_kind}:${row.account_id}=${balance.toFixed()}\n`);
  }
  return { sha256: hash.digest("hex"), accountCount: result.rows.length, totalWon: total.toFixed() };
}
