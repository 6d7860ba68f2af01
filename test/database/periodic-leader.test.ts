import pg from "pg";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { advisoryLockKeys } from "../../src/database/advisory-lock-keys";
import { PeriodicLeader } from "../../src/database/periodic-leader";
import { silentLogger } from "../billing/billing-ledger-fixtures";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { eventually } from "../workers/queue-test-support";

/**
 * Periodic tasks run in one process at a time: two processes' leaders compete for one advisory lock, only
 * the holder runs its tasks, and when its session dies (terminated here, as when its process is killed)
 * the other takes over within seconds and the first stops running them.
 */

let database: TestDatabase;
let admin: pg.Client;

/** Within this of its session's end, the leader is replaced (retries every 200 ms here). */
const takeoverBoundMs = 5_000;

beforeAll(async () => {
  database = await createTestDatabase("periodic_leader");
  admin = new pg.Client({ connectionString: inject("postgresServerUrl") });
  await admin.connect();
});

afterAll(async () => {
  await admin?.end();
  await database?.drop();
});

function leaderNamed(name: string, runs: string[], standbyRetryMs = 200): PeriodicLeader {
  const leader = new PeriodicLeader({
    connectionString: database.url,
    lockKey: advisoryLockKeys.billingLeader,
    applicationName: `leader-${name}`,
    standbyRetryMs,
    runsStopWaitMs: 1_000,
    logger: silentLogger,
  });
  leader.every("record", 50, async () => {
    runs.push(name);
  });
  return leader;
}

describe("periodic leader", () => {
  it("runs the tasks in one process, and in the other once the leader's session dies", async () => {
    // Given: two processes' leaders. The first, once its session dies, does not try again within the test,
    // as a killed process would not: a live one retrying at the same pace may win the lock back, which is
    // as it should be, but not what this test is about.
    const runs: string[] = [];
    const first = leaderNamed("first", runs, 600_000);
    const second = leaderNamed("second", runs);
    first.start();
    await eventually("the first leads", async () => first.leading);
    second.start();
    try {
      // When: both run for a while
      await new Promise((resolve) => setTimeout(resolve, 500));

      // Then: only the first ran its tasks
      expect(second.leading).toBe(false);
      expect(new Set(runs)).toEqual(new Set(["first"]));

      // When: the leader's session dies
      const terminated = await admin.query(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND application_name = $2",
        [database.name, "leader-first"],
      );
      expect(terminated.rows).toHaveLength(1);
      runs.length = 0;

      // Then: the other takes over promptly, and the first stops running them. Each retry opens a session,
      // which a server shared with a whole parallel test run may refuse or delay for a while: the bound is
      // the recovery docs/operations.md promises (seconds), not one retry interval.
      await eventually("the second leads", async () => second.leading, takeoverBoundMs);
      await eventually("the first stands by", async () => !first.leading, takeoverBoundMs);
      runs.length = 0;
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(new Set(runs)).toEqual(new Set(["second"]));
    } finally {
      await first.close();
      await second.close();
    }
  });

  it("starts a task registered while it leads", async () => {
    const runs: string[] = [];
    const leader = leaderNamed("late", runs);
    leader.start();
    try {
      await eventually("it leads", async () => leader.leading);
      const late: string[] = [];
      leader.every("late task", 50, async () => {
        late.push("ran");
      });
      await eventually("the late task ran", async () => late.length > 0, 2_000);
    } finally {
      await leader.close();
    }
  });
});
