import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { advisoryLockKeys } from "../../src/database/advisory-lock-keys";
import { limits } from "../../src/kernel/limits";
import type { RunningService } from "../../src/service";
import { capturedLog } from "../support/captured-log";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { serviceOptionsOf } from "../support/gateway-harness";
import { StartingService } from "../support/starting-service";

/**
 * A process that runs the projections and serves (the all-in-one role) reads their tables from its first
 * request: on a new database it starts once they stand, whoever leads them.
 */

interface LogLine {
  level: number;
  msg: string;
}

describe("an all-in-one process starting", () => {
  let database: TestDatabase | undefined;
  const running: RunningService[] = [];

  afterAll(async () => {
    for (const service of running) await service.close();
    await database?.drop();
  });

  function start(databaseUrl: string) {
    const { logger, lines } = capturedLog<LogLine>();
    return Object.assign(new StartingService(serviceOptionsOf(databaseUrl, { logger }), running), {
      log: lines,
    });
  }

  it("given a new database whose projections another process leads but has not prepared, then it waits for their tables, logging no error, and serves once they stand", async () => {
    database = await createTestDatabase("all_in_one_start");
    // Another process holds the runner's lead, as a worker busy preparing them would.
    const leader = new pg.Client({ connectionString: database.url });
    await leader.connect();
    await leader.query("SELECT pg_advisory_lock($1)", [advisoryLockKeys.projectionRunner]);

    const allInOne = start(database.url);
    // Long enough for the admission cache to have looked at the tables twice, had it started.
    await new Promise((resolve) => setTimeout(resolve, 2.5 * limits.admissionCacheRefreshIntervalMs));
    expect(allInOne.ready).toBe(false);

    await leader.end();
    const service = await allInOne.starting;
    const listening = await service.listen(0, "127.0.0.1");
    const models = await fetch(`${listening.url}/llm/models`, {
      headers: { authorization: "Bearer sk-unknown-key" },
    });
    // Admission read the key table: an unknown key, not a failed read.
    expect(models.status).toBe(401);
    await new Promise((resolve) => setTimeout(resolve, 1.5 * limits.admissionCacheRefreshIntervalMs));
    expect(allInOne.log.filter((line) => line.level >= 50)).toEqual([]);
  });

  it("given projections a newer release folded, then it starts without waiting for them", async () => {
    // The first test's database, as a newer release's worker leaves it during a rollout.
    const pool = new pg.Pool({ connectionString: database!.url });
    try {
      await pool.query(
        "UPDATE projection_checkpoints SET definition_version = definition_version + 1 WHERE projection = 'discounts'",
      );
      for (const service of running.splice(0)) await service.close();

      const allInOne = start(database!.url);
      await allInOne.starting;
      await expect
        .poll(() => allInOne.log.some((line) => line.msg.includes("stands aside for a newer release")))
        .toBe(true);
    } finally {
      await pool.end();
    }
  });
});
