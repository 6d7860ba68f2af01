import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { advisoryLockKeys } from "../src/database/advisory-lock-keys";
import { Money } from "../src/kernel/money";
import { createTestDatabase, type TestDatabase } from "./support/database";
import {
  chatStatus,
  gatewayOriginOf,
  killOutright,
  provisionKeyWithCredit,
  type ServiceProcess,
  spawnRole,
} from "./support/service-process";
import { eventually, removeDeploymentQueueData } from "./workers/queue-test-support";

/**
 * Processes killed outright (SIGKILL: no drain, no flush), as deployed for scale-out — one gateway and one
 * worker process on a shared database. A stream cut by its gateway's death is settled from its hold as
 * interrupted, estimated usage and charged within 30 s (C10), even when the leading worker is frozen then
 * (SIGSTOP: its sessions stay open); a worker killed under load loses and doubles no charge.
 */

const adminToken = "crash-admin-token-0123456789abcdef0123456789ab";

const started: ServiceProcess[] = [];
let database: TestDatabase | undefined;

/** A gateway listens on a port the system picks (PORT=0): see gatewayOriginOf. */
function environmentOf(database: TestDatabase): NodeJS.ProcessEnv {
  return {
    ...process.env,
    DATABASE_URL: database.url,
    SESSION_SECRET: "crash-session-secret-0123456789abcdef0123456789",
    KEY_PEPPER: "crash-key-pepper-0123456789abcdef0123456789abcd",
    ADMIN_TOKEN: adminToken,
    PORT: "0",
    HOST: "127.0.0.1",
    // A stream of 12 to 60 tokens lasts about 1 to 6 s.
    SIMULATOR_TOKENS_PER_SECOND: "10",
    LOG_LEVEL: "info",
  };
}

async function startRole(
  role: "gateway" | "worker",
  environment: NodeJS.ProcessEnv,
): Promise<ServiceProcess> {
  const running = await spawnRole(role, environment);
  started.push(running);
  return running;
}

const provision = (url: string) => provisionKeyWithCredit(url, adminToken, "crasher", "100000");

async function query<Row extends pg.QueryResultRow>(sql: string, values: unknown[] = []): Promise<Row[]> {
  const client = new pg.Client({ connectionString: database!.url });
  await client.connect();
  try {
    return (await client.query<Row>(sql, values)).rows;
  } finally {
    await client.end();
  }
}

afterEach(async () => {
  for (const running of started.splice(0)) if (running.child.exitCode === null) running.child.kill("SIGKILL");
  if (database)
    await removeDeploymentQueueData({ redisUrl: process.env.REDIS_URL, databaseUrl: database.url });
  await database?.drop();
  database = undefined;
});

/** How many sessions of the test's database hold the billing workers' leader lock. */
async function billingLeaders(): Promise<number> {
  const [row] = await query<{ count: number }>(
    `SELECT count(*)::int AS count FROM pg_locks held
     WHERE held.locktype = 'advisory' AND held.granted AND held.classid = 0 AND held.objid = $1
       AND held.database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
    [advisoryLockKeys.billingLeader],
  );
  return row!.count;
}

/** A stream under way through the gateway at `url`: its request id once its first chunk has arrived. */
async function streamUnderWay(url: string, key: string): Promise<string> {
  const response = await fetch(`${url}/llm/v1/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({
      model: "alpha-5.4-mini",
      messages: [{ role: "user", content: "Tell me a long story about rivers and the sea" }],
      stream: true,
    }),
  });
  expect(response.status).toBe(200);
  const reader = response.body!.getReader();
  expect(new TextDecoder().decode((await reader.read()).value)).toContain("chat.completion.chunk");
  // The rest of the stream is read (to its cut) in the background.
  void (async () => {
    while (!(await reader.read().catch(() => ({ done: true }))).done);
  })();
  return response.headers.get("x-request-id")!;
}

/**
 * Waits until the request's hold is settled, within 30 s of `sinceMs` (C10's bound for an orphan), then until
 * its usage is charged, and asserts it was settled from its hold as interrupted, estimated, and charged once,
 * and that nothing is left held or pending. The charge has a wait of its own: C10 bounds the settlement, and
 * the charge follows the log and its projections, which a loaded server shared with other tests can delay.
 */
async function expectChargedFromItsHold(requestId: string, sinceMs: number): Promise<void> {
  const typesOf = async () =>
    (
      await query<{ type: string }>(
        "SELECT type FROM ledger_events WHERE stream_id = $1 ORDER BY stream_version",
        [`usage-${requestId}`],
      )
    ).map((row) => row.type);
  let types: string[] = [];
  const untilLogged = async (type: string, deadlineMs: number) => {
    while (Date.now() < deadlineMs) {
      types = await typesOf();
      if (types.includes(type)) return;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  };
  await untilLogged("UsageRecorded", sinceMs + 30_000);
  expect(types, "settled within 30 s").toContain("UsageRecorded");
  await untilLogged("UsageCharged", Date.now() + 30_000);
  expect(types).toEqual(["UsageAuthorized", "UsageRecorded", "UsageCharged"]);
  const [usage] = await query<{ data: { outcome: string; usageSource: string } }>(
    "SELECT data FROM ledger_events WHERE stream_id = $1 AND type = 'UsageRecorded'",
    [`usage-${requestId}`],
  );
  expect(usage!.data).toMatchObject({ outcome: "interrupted", usageSource: "estimated" });
  const [funds] = await query<{ held_won: string; pending_won: string }>(
    "SELECT held_won::text, pending_won::text FROM account_funds WHERE account_id = 'crasher'",
  );
  expect(Number(funds!.held_won)).toBe(0);
  expect(Number(funds!.pending_won)).toBe(0);
}

describe("processes killed outright", () => {
  it("settles a stream cut by its gateway's death within 30 s, as interrupted and estimated, and charges it", async () => {
    // Given a worker, a gateway and a stream under way through it
    database = await createTestDatabase("crash_gateway");
    const environment = environmentOf(database);
    await startRole("worker", environment);
    const gateway = await startRole("gateway", environment);
    const url = gatewayOriginOf(gateway);
    const requestId = await streamUnderWay(url, await provision(url));

    // When the gateway dies mid-stream
    await killOutright(gateway);

    // Then the hold is settled within 30 s, and charged once
    await expectChargedFromItsHold(requestId, Date.now());
  }, 150_000);

  it("settles a dead gateway's stream within 30 s while the leading worker is frozen, and charges it once", async () => {
    // Given a leading worker, a stand-by, a gateway and a stream under way through it
    database = await createTestDatabase("crash_frozen_leader");
    const environment = environmentOf(database);
    const leader = await startRole("worker", environment);
    await eventually("the worker leads", async () => (await billingLeaders()) === 1, 30_000);
    await startRole("worker", environment);
    const gateway = await startRole("gateway", environment);
    const url = gatewayOriginOf(gateway);
    const requestId = await streamUnderWay(url, await provision(url));

    // When the leading worker freezes (its sessions and their locks stay open), then the gateway dies
    leader.child.kill("SIGSTOP");
    await killOutright(gateway);
    const killedAtMs = Date.now();

    // Then the stand-by takes the lead, the hold is settled within 30 s, and charged
    await expectChargedFromItsHold(requestId, killedAtMs);

    // And once the frozen worker thaws, nothing is settled or charged twice
    leader.child.kill("SIGCONT");
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    const [counts] = await query<{ usages: number; charges: number }>(
      `SELECT count(*) FILTER (WHERE type = 'UsageRecorded')::int AS usages,
              count(*) FILTER (WHERE type = 'UsageCharged')::int AS charges
       FROM ledger_events WHERE stream_id = $1`,
      [`usage-${requestId}`],
    );
    expect(counts).toEqual({ usages: 1, charges: 1 });
    expect(await billingLeaders()).toBe(1);
  }, 150_000);

  it("loses and doubles no charge when the worker is killed under load and another takes over", async () => {
    database = await createTestDatabase("crash_worker");
    const environment = environmentOf(database);
    const worker = await startRole("worker", environment);
    const url = gatewayOriginOf(await startRole("gateway", environment));
    const key = await provision(url);

    // Requests in waves while the worker is killed, then a new worker started.
    const request = () => chatStatus(url, key);
    const first = await Promise.all(Array.from({ length: 30 }, request));
    await killOutright(worker);
    const second = await Promise.all(Array.from({ length: 30 }, request));
    await startRole("worker", environment);
    expect([...first, ...second].every((status) => status === 200)).toBe(true);

    let counts: { usages: number; charges: number; distinct: number } = {
      usages: 0,
      charges: 0,
      distinct: 0,
    };
    const deadlineMs = Date.now() + 60_000;
    while (Date.now() < deadlineMs) {
      [counts] = (await query<{ usages: number; charges: number; distinct: number }>(
        `SELECT count(*) FILTER (WHERE type = 'UsageRecorded')::int AS usages,
                count(*) FILTER (WHERE type = 'UsageCharged')::int AS charges,
                count(DISTINCT stream_id) FILTER (WHERE type = 'UsageCharged')::int AS distinct
         FROM ledger_events`,
      )) as [typeof counts];
      if (counts.charges >= 60) break;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(counts).toEqual({ usages: 60, charges: 60, distinct: 60 });
    const [balance] = await query<{ balance: string; spent: string }>(
      `SELECT (SELECT balance_won::text FROM account_funds WHERE account_id = 'crasher') AS balance,
              (SELECT sum((data->>'amountWon')::numeric)::text FROM ledger_events WHERE type = 'UsageCharged') AS spent`,
    );
    expect(new Money(balance!.balance).plus(balance!.spent).toFixed()).toBe("100000");
  }, 180_000);
});
