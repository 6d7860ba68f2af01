import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { billingLimits } from "../../src/kernel/limits";
import { capturedLog } from "../support/captured-log";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { type GatewayHarness, startGatewayHarness } from "../support/gateway-harness";
import { type GenerationOutcome, sendChat } from "../support/generation-outcomes";
import {
  createPrivatePostgresCluster,
  type PrivatePostgresCluster,
} from "../support/private-postgres-cluster";

/**
 * Deployments that share one Redis keep their queues apart, and the processes of one deployment share theirs,
 * whatever the databases are called and however they are reached: a charge job taken by another deployment's
 * worker finds no usage there, is dropped from its job, and its charge waits for the pending-charge sweep
 * (5 s and more), where it may be taken by the wrong worker again.
 *
 * A usage charged while its worker's sweep enqueued nothing was charged by its gateway's own job. That is
 * asserted from the sweep's own log, not from how soon the charge came: on a shared, loaded server the log
 * and its projections can lag a charged usage by seconds, which says nothing about which job charged it.
 */

const creditWon = "100000";
/** Requests apart by more than the gateway's linger: each its own charge job. */
const requestsEach = 6;
const requestGapMs = billingLimits.chargeEnqueueLingerMs + 50;
const cannotBeCharged = "this usage cannot be charged; it is dropped from its job";
const sweptAgain = "uncharged usage found and enqueued again";

interface LogLine {
  msg: string;
  requestId?: string;
}

const redisUrl = process.env.REDIS_URL;
if (redisUrl === undefined) throw new Error("REDIS_URL must be set for the shared Redis test");
const cleanups: (() => Promise<void>)[] = [];

afterAll(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup().catch(() => {});
});

/** A database on the shared server, and one of the same name on a server of the test's own. */
async function sameNameOnTwoServers(): Promise<[TestDatabase, TestDatabase]> {
  const shared = await createTestDatabase("same_name");
  cleanups.push(() => shared.drop());
  const cluster: PrivatePostgresCluster = await createPrivatePostgresCluster("same_name");
  cleanups.push(() => cluster.drop());
  const admin = new pg.Client({ connectionString: cluster.url });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${shared.name}`);
  await admin.end();
  const url = new URL(cluster.url);
  url.pathname = `/${shared.name}`;
  expect(new URL(shared.url).pathname).toBe(url.pathname);
  // The cluster goes whole, with its database.
  return [shared, { url: url.toString(), name: shared.name, drop: async () => {} }];
}

/** The same database, reached by `localhost` where `database.url` says 127.0.0.1. */
function byLocalhost(database: TestDatabase): TestDatabase {
  const url = new URL(database.url);
  expect(url.hostname).toBe("127.0.0.1");
  url.hostname = "localhost";
  return { url: url.toString(), name: database.name, drop: async () => {} };
}

async function started(options: Parameters<typeof startGatewayHarness>[0]): Promise<GatewayHarness> {
  const harness = await startGatewayHarness(options);
  cleanups.push(() => harness.close());
  return harness;
}

async function keyWithCredit(harness: GatewayHarness, account: string): Promise<string> {
  const { key } = await harness.issueKey(await harness.session(account));
  await harness.topUp({ kind: "user", id: account }, creditWon);
  return key;
}

/** Each request's charges in `pool`'s ledger. */
async function chargesOf(pool: pg.Pool, outcomes: readonly GenerationOutcome[]) {
  const { rows } = await pool.query<{ request_id: string; charges: number }>(
    `SELECT substr(stream_id, 7) AS request_id, count(*) FILTER (WHERE type = 'UsageCharged')::int AS charges
     FROM ledger_events WHERE stream_id = ANY($1) GROUP BY stream_id ORDER BY 1`,
    [outcomes.map((outcome) => `usage-${outcome.requestId}`)],
  );
  return rows;
}

/** Every request charged once, and none of them left to the sweep of `workerLog`'s worker. */
async function expectChargedOnceByItsOwnJob(
  harness: GatewayHarness,
  outcomes: readonly GenerationOutcome[],
  workerLog: { lines: LogLine[] },
): Promise<void> {
  expect(outcomes.map((outcome) => outcome.status)).toEqual(outcomes.map(() => 200));
  const pool = harness.service.ledger.pool;
  await expect
    .poll(async () => (await chargesOf(pool, outcomes)).filter((row) => row.charges > 0).length, {
      timeout: 30_000,
      interval: 100,
    })
    .toBe(outcomes.length);
  const charges = await chargesOf(pool, outcomes);
  expect(charges.map((row) => row.charges)).toEqual(outcomes.map(() => 1));
  expect(workerLog.lines.filter((line) => line.msg === sweptAgain)).toEqual([]);
}

describe("deployments sharing one Redis", () => {
  it("charge each request in its own ledger, once, by its own gateway's job, though their databases bear one name on two servers", async () => {
    const [onShared, onPrivate] = await sameNameOnTwoServers();
    const deployments = await Promise.all(
      [onShared, onPrivate].map(async (database) => {
        const workerLog = capturedLog<LogLine>();
        const harness = await started({ database, billing: { redisUrl, logger: workerLog.logger } });
        return {
          harness,
          workerLog,
          key: await keyWithCredit(harness, "same-name"),
          outcomes: [] as GenerationOutcome[],
        };
      }),
    );

    for (let request = 0; request < requestsEach; request += 1)
      for (const deployment of deployments) {
        deployment.outcomes.push(
          await sendChat(deployment.harness.baseUrl, {
            account: "same-name",
            key: deployment.key,
            streamed: request % 2 === 1,
            timeoutMs: 10_000,
          }),
        );
        await new Promise((resolve) => setTimeout(resolve, requestGapMs / deployments.length));
      }

    for (const deployment of deployments)
      await expectChargedOnceByItsOwnJob(deployment.harness, deployment.outcomes, deployment.workerLog);
    // Neither worker was handed a request of the other's.
    for (const deployment of deployments)
      expect(deployment.workerLog.lines.filter((line) => line.msg === cannotBeCharged)).toEqual([]);
  }, 90_000);
});

describe("processes of one deployment", () => {
  it("share their queues though they reach the database by different host names", async () => {
    const database = await createTestDatabase("two_hosts");
    cleanups.push(() => database.drop());
    // A worker process reaching the database at 127.0.0.1, and a gateway process (no workers) at localhost.
    const workerLog = capturedLog<LogLine>();
    const worker = await started({
      database: { ...database, drop: async () => {} },
      billing: { redisUrl, logger: workerLog.logger },
    });
    const gateway = await started({
      database: byLocalhost(database),
      billing: { redisUrl, runWorkers: false },
    });
    const key = await keyWithCredit(gateway, "two-hosts");

    const outcomes: GenerationOutcome[] = [];
    for (let request = 0; request < 3; request += 1) {
      outcomes.push(
        await sendChat(gateway.baseUrl, { account: "two-hosts", key, streamed: false, timeoutMs: 10_000 }),
      );
      await new Promise((resolve) => setTimeout(resolve, requestGapMs));
    }

    // The worker's reconciler took the gateway's jobs: nothing was left to the worker's sweep.
    await expectChargedOnceByItsOwnJob(worker, outcomes, workerLog);
  }, 60_000);
});
