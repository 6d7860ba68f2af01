import { Redis } from "ioredis";
import type { QueueBackend } from "./queue-backend";

/**
 * Removes the keys of a queue backend's Redis prefix (a test's or a benchmark's run), bounded: a run creates a
 * few hundred. Nothing to do without a prefix or on the PostgreSQL backend (its tables go with the database).
 */
export async function removeQueueData(backend: QueueBackend): Promise<void> {
  if (backend.kind !== "redis" || backend.prefix === undefined) return;
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
