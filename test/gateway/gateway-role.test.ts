import { Writable } from "node:stream";
import pg from "pg";
import pino from "pino";
import { afterAll, describe, expect, it } from "vitest";
import { advisoryLockKeys } from "../../src/database/advisory-lock-keys";
import { limits } from "../../src/kernel/limits";
import { type RunningService, type ServiceOptions, startService } from "../../src/service";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { serviceOptionsOf } from "../support/gateway-harness";
import { StartingService } from "../support/starting-service";
import { eventually } from "../workers/queue-test-support";

/**
 * `--role=gateway` (runProjections: false) leaves the projections to worker processes: it waits at start
 * until one has prepared them, and never takes the runner's lock, even when no worker is left.
 */

function serviceOptions(databaseUrl: string, logLines: string[]): ServiceOptions {
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logLines.push(String(chunk));
      done();
    },
  });
  // No generation request is made here: the upstreams are never called.
  return serviceOptionsOf(databaseUrl, { logger: pino({ level: "info" }, sink) });
}

async function runnerLocksHeld(databaseUrl: string): Promise<number> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const result = await client.query<{ held: number }>(
      `SELECT count(*)::int AS held FROM pg_locks
       WHERE locktype = 'advisory' AND granted AND classid = 0 AND objid = $1
         AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
      [advisoryLockKeys.projectionRunner],
    );
    return result.rows[0]!.held;
  } finally {
    await client.end();
  }
}

describe("a gateway-role process", () => {
  let database: TestDatabase | undefined;
  const running: RunningService[] = [];

  afterAll(async () => {
    for (const service of running) await service.close();
    await database?.drop();
  });

  /** A gateway-role process starting on the database: what it logs, and whether it has started yet. */
  function startEdge(databaseUrl: string) {
    const log: string[] = [];
    return Object.assign(
      new StartingService({ ...serviceOptions(databaseUrl, log), runProjections: false }, running),
      { log },
    );
  }

  it("waits for a worker to prepare the projections, then serves without ever leading them", async () => {
    database = await createTestDatabase("gateway_role");
    const databaseUrl = database.url;
    const edge = startEdge(databaseUrl);
    await eventually("the edge says it waits for a worker", async () =>
      edge.log.some((line) => line.includes("waiting for a worker process to prepare the projections")),
    );
    expect(edge.ready).toBe(false);
    expect(await runnerLocksHeld(databaseUrl)).toBe(0);

    const worker = await startService(serviceOptions(databaseUrl, []));
    const started = await edge.starting;
    await eventually(
      "the worker leads the projections",
      async () => (await runnerLocksHeld(databaseUrl)) === 1,
    );
    const listening = await started.listen(0, "127.0.0.1");
    expect((await fetch(`${listening.url}/healthz`)).status).toBe(200);

    await worker.close();
    // Longer than a stand-by runner waits before trying the lock again: one in the edge would hold it now.
    await new Promise((resolve) => setTimeout(resolve, limits.projectionStandbyRetryMs + 1_000));
    expect(await runnerLocksHeld(databaseUrl)).toBe(0);
  });

  it("given projections a newer release folded, then it says it waits for that release or a rebuild, and starts once they are this release's", async () => {
    // The first test's database, its projections prepared by this release's worker.
    const databaseUrl = database!.url;
    const pool = new pg.Pool({ connectionString: databaseUrl });
    try {
      // As a newer release's worker leaves them during a rollout: the discounts at a definition beyond ours.
      const folded = await pool.query<{ definition_version: number }>(
        "UPDATE projection_checkpoints SET definition_version = definition_version + 1 WHERE projection = 'discounts' RETURNING definition_version",
      );
      const newerVersion = folded.rows[0]!.definition_version;
      const edge = startEdge(databaseUrl);
      await eventually("the edge says a newer release folded the discounts", async () =>
        edge.log.some(
          (line) =>
            line.includes("the projections are folded by a newer release") &&
            line.includes(`discounts (v${newerVersion}, this process knows v${newerVersion - 1})`),
        ),
      );
      expect(edge.log.some((line) => line.includes("waiting for a worker process"))).toBe(false);
      expect(edge.ready).toBe(false);

      // Back at this release's definition (a rebuild with it would leave it so): the edge starts.
      await pool.query(
        "UPDATE projection_checkpoints SET definition_version = $1 WHERE projection = 'discounts'",
        [newerVersion - 1],
      );
      await edge.starting;
      expect(edge.ready).toBe(true);
    } finally {
      await pool.end();
    }
  });
});
