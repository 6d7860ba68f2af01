import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allProjections } from "../../projections";
import { Money } from "../../src/kernel/money";
import { rebuildProjections } from "../../src/ledger/ledger-maintenance";
import type { StreamAppend } from "../../src/ledger/store/event-store";
import { isAtOrAfter, type LogPosition, logStart } from "../../src/ledger/store/log-position";
import { verifyProjections } from "../../src/ledger/verify-projections";
import { topUp, usageCharge } from "../support/ledger-fixtures";
import { type LedgerHarness, openLedgerHarness } from "../support/ledger-harness";
import { eventually } from "../workers/queue-test-support";

/**
 * Two worker processes run the projection runner on one database: one applies, the other stands by. The
 * leader killed outright (SIGKILL) mid-stream, and its successor's connection cut by the server
 * (pg_terminate_backend), the projections still hold every event once: their tables are, row for row, what
 * a clean rebuild of the log gives.
 */

interface RunnerProcess {
  child: ChildProcess;
  output: () => string;
  applied: () => number;
}

function spawnRunner(databaseUrl: string): RunnerProcess {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", "test/projections/support/projection-runner-process.ts", databaseUrl, "25"],
    { stdio: ["ignore", "pipe", "pipe"] },
  );
  let output = "";
  child.stdout!.on("data", (chunk) => {
    output += String(chunk);
  });
  child.stderr!.on("data", (chunk) => {
    output += String(chunk);
  });
  return {
    child,
    output: () => output,
    applied: () => output.split("\n").filter((line) => line.startsWith("applied ")).length,
  };
}

const accounts = Array.from({ length: 8 }, (_, index) => `crash-${index}`);

describe("projection runners in two processes, the leader killed mid-stream", () => {
  let harness: LedgerHarness;
  const running: RunnerProcess[] = [];

  beforeAll(async () => {
    harness = await openLedgerHarness("runner_processes");
  });
  afterAll(async () => {
    for (const runner of running) runner.child.kill("SIGKILL");
    await harness?.dispose();
  });

  const query = async <Row extends Record<string, unknown>>(sql: string, values: unknown[] = []) =>
    (await harness.ledger.pool.query<Row>(sql, values)).rows;

  /** How many sessions hold the projection runner's lock. */
  const leaders = async () =>
    (
      await query<{ count: number }>(
        `SELECT count(*)::int AS count FROM pg_stat_activity
         WHERE datname = current_database() AND application_name = 'projections'
           AND pid IN (SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted)`,
      )
    )[0]!.count;

  /** Every row of every projection table, as text, in one digest per table. */
  const tableDigests = async () => {
    const digests: Record<string, string | null> = {};
    for (const table of allProjections.flatMap((projection) => projection.tables)) {
      const [row] = await query<{ digest: string | null }>(
        `SELECT md5(string_agg(row_text, '|' ORDER BY row_text)) AS digest
         FROM (SELECT stored::text AS row_text FROM ${table.name} stored) rows`,
      );
      digests[table.name] = row!.digest;
    }
    return digests;
  };

  it("given appends all the while, then every event is applied once, and the tables are a clean rebuild's", async () => {
    const expectedWon = new Map(accounts.map((account) => [account, new Money(0)]));
    let last: LogPosition = logStart;
    let appending = true;
    let round = 0;
    const appendRound = async () => {
      const appends: StreamAppend[] = accounts.flatMap((account, index) => {
        const amount = `${(round % 7) + index}.${index}5`;
        expectedWon.set(account, expectedWon.get(account)!.plus(amount));
        return [
          {
            streamId: `account-user-${account}`,
            expectedVersion: "any" as const,
            events: [topUp(account, amount, `round ${round}`)],
          },
          usageCharge(
            { kind: "user", id: account },
            `crash-${round}-${index}`,
            "2026-11-10T03:00:00.000Z",
            "0.5",
          ),
        ];
      });
      round++;
      for (const outcome of await harness.store.appendBatch(appends)) {
        if (outcome.status === "rejected") throw outcome.reason;
        if (isAtOrAfter(outcome.value.position, last)) last = outcome.value.position;
      }
    };

    // Given: one runner process leading, then a second standing by
    const first = spawnRunner(harness.database.url);
    running.push(first);
    await appendRound();
    await eventually("the first process applies", async () => first.applied() > 0, 60_000);
    const second = spawnRunner(harness.database.url);
    running.push(second);
    await eventually("the second process started", async () => second.output().includes("started"), 60_000);
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(second.applied()).toBe(0);
    expect(await leaders()).toBe(1);

    const appender = (async () => {
      while (appending) await appendRound();
    })();
    try {
      // When: the leader is killed outright while it applies
      const appliedBefore = first.applied();
      await eventually("the leader applies under load", async () => first.applied() > appliedBefore + 5);
      const killed = once(first.child, "exit");
      first.child.kill("SIGKILL");
      await killed;

      // Then: the stand-by takes over; when the server cuts its session, it leads again
      await eventually("the second process leads", async () => second.applied() > 5, 30_000);
      expect(await leaders()).toBe(1);
      await query(
        `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
         WHERE datname = current_database() AND application_name = 'projections'`,
      );
      const appliedBeforeCut = second.applied();
      await eventually("the second process leads again", async () => second.applied() > appliedBeforeCut + 5);
    } finally {
      appending = false;
      await appender;
    }
    await eventually(
      "every checkpoint reaches the last append",
      async () => {
        const checkpoints = await query<{ commit_position: string; prepare_position: string }>(
          "SELECT commit_position, prepare_position FROM projection_checkpoints",
        );
        return (
          checkpoints.length === allProjections.length &&
          checkpoints.every((row) =>
            isAtOrAfter({ commit: BigInt(row.commit_position), prepare: BigInt(row.prepare_position) }, last),
          )
        );
      },
      60_000,
    );
    expect(second.output()).toContain("failing");
    expect(await leaders()).toBe(1);

    // Every top-up once
    const balances = await query<{ account_id: string; topped_up_won: string }>(
      "SELECT account_id, topped_up_won::text FROM projection_balances WHERE account_id LIKE 'crash-%' ORDER BY account_id",
    );
    expect(balances).toEqual(
      accounts.map((account) => ({
        account_id: account,
        topped_up_won: expectedWon.get(account)!.toFixed(),
      })),
    );
    // Every row as the TypeScript fold has it, and as a clean rebuild in SQL writes it
    const context = { pool: harness.ledger.pool, store: harness.store, projections: allProjections };
    expect(await verifyProjections(context)).toEqual([]);
    const stopped = once(second.child, "exit");
    second.child.kill("SIGTERM");
    await stopped;
    const live = await tableDigests();
    await rebuildProjections(context, { fold: "sql", batchSizeMax: 1_000 });
    expect(await tableDigests()).toEqual(live);
  }, 180_000);
});
