import { Redis } from "ioredis";
import { LedgerSchemaError } from "../../ledger/store/open-ledger";
import { type QueueBackend, queueBackendOf } from "./queue-backend";

/**
 * Removes the keys of a queue backend's Redis prefix (a test's or a benchmark's run), bounded: a run creates a
 * few hundred. Nothing to do on the PostgreSQL backend (its tables go with the database).
 */
export async function removeQueueData(backend: QueueBackend): Promise<void> {
  if (backend.kind !== "redis") return;
  const redis = new Redis(backend.redisUrl, { maxRetriesPerRequest: 1 });
  try {
    let cursor = "0";
    for (let round = 0; round < 1_000; round += 1) {
      const [next, keys] = await redis.scan(cursor, "MATCH", `${backend.prefix}:*`, "COUNT", 1_000);
      if (keys.length > 0) await redis.del(...keys);
      cursor = next;
      if (cursor === "0") break;
    }
  } finally {
    redis.disconnect();
  }
}

/**
 * Removes the queue data of the processes a test or a benchmark ran on the database at `databaseUrl`, named
 * after its ledger's id: read before the database is dropped. A database that holds no ledger id had no
 * process open a queue, so there is nothing to remove.
 */
export async function removeDeploymentQueueData(deployment: {
  redisUrl: string | undefined;
  databaseUrl: string;
}): Promise<void> {
  if (deployment.redisUrl === undefined) return;
  const backend = await queueBackendOf(deployment).catch((error: unknown) => {
    if (error instanceof LedgerSchemaError) return undefined;
    throw error;
  });
  if (backend) await removeQueueData(backend);
}
