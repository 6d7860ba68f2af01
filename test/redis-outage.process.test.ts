import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { Money } from "../src/kernel/money";
import { createTestDatabase, type TestDatabase } from "./support/database";
import { type PrivateRedis, startPrivateRedis } from "./support/private-redis";
import {
  chatStatus,
  gatewayOriginOf,
  provisionKeyWithCredit,
  type ServiceProcess,
  spawnRole,
} from "./support/service-process";
import { startTcpProxy, type TcpProxy } from "./support/tcp-proxy";

/**
 * Redis goes away under load, as deployed for scale-out — a gateway and a worker process on a shared database,
 * their charge queue on a Redis of the test's own. The request path holds and settles in PostgreSQL, so every
 * request is still answered; charges wait for the queue, and once it is back every usage is charged exactly
 * once. Two ways of going away: unreachable (connections refused and dropped, as a dead host or a stopped
 * server), and frozen (SIGSTOP: connections stay open and nothing answers, which nothing resets). Losing the
 * queue's data is test/workers/queue-data-loss.test.ts.
 */

const adminToken = "redis-outage-admin-token-0123456789abcdef012345";
const credit = "100000";
const outageMs = 8_000;

const started: ServiceProcess[] = [];
let database: TestDatabase | undefined;
let redis: PrivateRedis | undefined;
let proxy: TcpProxy | undefined;

afterEach(async () => {
  for (const running of started.splice(0)) if (running.child.exitCode === null) running.child.kill("SIGKILL");
  await proxy?.close();
  await redis?.stop();
  await database?.drop();
  proxy = undefined;
  redis = undefined;
  database = undefined;
});

async function query<Row extends pg.QueryResultRow>(sql: string): Promise<Row[]> {
  const client = new pg.Client({ connectionString: database!.url });
  await client.connect();
  try {
    return (await client.query<Row>(sql)).rows;
  } finally {
    await client.end();
  }
}

/** A worker and a gateway whose queue is at `redisUrl`: the gateway's origin. */
async function startDeployment(redisUrl: string): Promise<string> {
  const environment: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: database!.url,
    REDIS_URL: redisUrl,
    SESSION_SECRET: "redis-outage-session-secret-0123456789abcdef012",
    KEY_PEPPER: "redis-outage-key-pepper-0123456789abcdef01234567",
    ADMIN_TOKEN: adminToken,
    PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: "info",
  };
  started.push(await spawnRole("worker", environment));
  const gateway = await spawnRole("gateway", environment);
  started.push(gateway);
  return gatewayOriginOf(gateway);
}

/** Waves of ten requests at once, one wave every 250 ms, until `whileRunning` settles: their statuses. */
async function loadWhile(url: string, key: string, whileRunning: Promise<void>): Promise<number[]> {
  let running = true;
  const ended = whileRunning.finally(() => {
    running = false;
  });
  const statuses: number[] = [];
  while (running) {
    statuses.push(...(await Promise.all(Array.from({ length: 10 }, () => chatStatus(url, key)))));
    await Promise.race([ended, new Promise((resolve) => setTimeout(resolve, 250))]);
  }
  await ended;
  return statuses;
}

interface LedgerCounts {
  usages: number;
  charges: number;
  charged: number;
}

const countsStatement = `SELECT count(*) FILTER (WHERE type = 'UsageRecorded')::int AS usages,
                                count(*) FILTER (WHERE type = 'UsageCharged')::int AS charges,
                                count(DISTINCT stream_id) FILTER (WHERE type = 'UsageCharged')::int AS charged
                         FROM ledger_events`;

/**
 * What shows the outage real, read at its end: readiness names the queue as failing, and usages recorded
 * meanwhile wait uncharged.
 */
async function duringOutage(url: string): Promise<{ failing: string[]; uncharged: number }> {
  const ready = await fetch(`${url}/health/ready`);
  const { failing } = (await ready.json()) as { failing: string[] };
  const [counts] = (await query<LedgerCounts>(countsStatement)) as [LedgerCounts];
  return { failing, uncharged: counts.usages - counts.charges };
}

/**
 * Waits for `answered` requests to be charged, then asserts each was charged once, in full. The bound: a
 * usage whose job never reached the queue is enqueued again by the sweep once it is 5 s old, every 2 s,
 * and Redis's clients reconnect within 5 s (`billingLimits.redisReconnectDelayMaxMs`); measured, all were
 * charged 6 s after the load ended (0.3 s after a freeze). A loaded machine shared with other tests is given
 * five times that.
 */
async function expectEachChargedOnce(answered: number): Promise<void> {
  let counts: LedgerCounts = { usages: 0, charges: 0, charged: 0 };
  const deadlineMs = Date.now() + 30_000;
  while (Date.now() < deadlineMs) {
    [counts] = (await query<LedgerCounts>(countsStatement)) as [LedgerCounts];
    if (counts.charges >= answered) break;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  expect(counts).toEqual({ usages: answered, charges: answered, charged: answered });
  const [funds] = await query<{ balance: string; spent: string; held: string; pending: string }>(
    `SELECT funds.balance_won::text AS balance, funds.held_won::text AS held,
            funds.pending_won::text AS pending,
            (SELECT sum((data->>'amountWon')::numeric)::text FROM ledger_events
             WHERE type = 'UsageCharged') AS spent
     FROM account_funds funds WHERE funds.account_id = 'outage'`,
  );
  expect(new Money(funds!.balance).plus(funds!.spent).toFixed()).toBe(credit);
  expect({ held: Number(funds!.held), pending: Number(funds!.pending) }).toEqual({ held: 0, pending: 0 });
}

/** A way for Redis to go away: where the deployment finds it, and how it goes away and comes back. */
interface RedisFault {
  fault: string;
  comesBack: string;
  queueUrlOf(server: PrivateRedis): Promise<string>;
  /** Away for `outageMs`; `atItsEnd` runs while it is still away, then it comes back. */
  goAway(server: PrivateRedis, atItsEnd: () => Promise<void>): Promise<void>;
}

const faults: RedisFault[] = [
  {
    fault: "unreachable",
    comesBack: "it is back",
    // Through a proxy that refuses new connections and drops open ones when cut.
    async queueUrlOf(server) {
      proxy = await startTcpProxy({ host: "127.0.0.1", port: Number(new URL(server.url).port) });
      return proxy.urlFor(server.url);
    },
    async goAway(_server, atItsEnd) {
      await proxy!.cut();
      await new Promise((resolve) => setTimeout(resolve, outageMs));
      await atItsEnd();
      await proxy!.restore();
    },
  },
  {
    fault: "frozen",
    comesBack: "it thaws",
    queueUrlOf: async (server) => server.url,
    // Its connections stay open, and nothing answers on them.
    goAway: (server, atItsEnd) => server.freezeFor(outageMs, atItsEnd),
  },
];

describe("Redis going away under load", () => {
  it.each(faults.map((fault) => [fault.fault, fault.comesBack, fault] as const))(
    "%s for 8 s: every request is answered, and each is charged once after %s",
    async (_fault, _comesBack, { fault, queueUrlOf, goAway }) => {
      // Given
      database = await createTestDatabase(`redis_${fault}`);
      redis = await startPrivateRedis();
      const url = await startDeployment(await queueUrlOf(redis));
      const key = await provisionKeyWithCredit(url, adminToken, "outage", credit);

      // When Redis goes away for 8 s under load, with load before and after
      let seen: Awaited<ReturnType<typeof duringOutage>> | undefined;
      const outage = (async () => {
        await new Promise((resolve) => setTimeout(resolve, 1_000));
        await goAway(redis!, async () => {
          seen = await duringOutage(url);
        });
        await new Promise((resolve) => setTimeout(resolve, 1_000));
      })();
      const statuses = await loadWhile(url, key, outage);

      // Then
      expect(seen).toMatchObject({ failing: ["queue"], uncharged: expect.any(Number) });
      expect(seen!.uncharged).toBeGreaterThan(0);
      expect(statuses.filter((status) => status !== 200)).toEqual([]);
      await expectEachChargedOnce(statuses.length);
    },
    150_000,
  );
});
