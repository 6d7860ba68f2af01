import pg from "pg";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { queueBackendOf } from "../../../src/billing/queue/queue-backend";
import { createOperations, type Operations } from "../../../src/operations/operations";
import { type GatewayHarness, startGatewayHarness } from "../../support/gateway-harness";
import {
  expectBalanceIsCreditLessCharges,
  expectBilledAsAnswered,
  expectLedgerUnavailable,
  type GenerationOutcome,
  sendChat,
} from "../../support/generation-outcomes";
import { callJson } from "../../support/json-call";
import {
  createPrivatePostgresCluster,
  type PrivatePostgresCluster,
} from "../../support/private-postgres-cluster";

/**
 * Another application takes every connection the server allows (`max_connections`), and the gateway's own
 * are gone (a restart of the server, a network blip): every connection the gateway opens is refused with
 * 53300 "too many clients". C3: requests are refused 503/300, never 500, and reach no upstream once the
 * gateway knows; readiness says PostgreSQL is unreachable; once the other application lets go, the same
 * gateway serves again by itself, and every request is billed as it ended — once.
 */

const otherApplication = "other-application";
const creditWon = "100000";
const requestsWhileExhausted = 12;

describe("a server whose connections another application took", () => {
  let cluster: PrivatePostgresCluster;
  let operations: Operations;
  let harness: GatewayHarness;
  let key = "";
  /** The other application's connections; the first also asks the server what it needs to know. */
  const taken: pg.Client[] = [];

  beforeAll(async () => {
    if (!process.env.REDIS_URL) throw new Error("REDIS_URL must be set for the exhausted connections test");
    cluster = await createPrivatePostgresCluster("exhausted");
    const setUp = new pg.Client({ connectionString: cluster.url });
    await setUp.connect();
    // Fewer slots than the default 100: fewer backends for the other application to start.
    await setUp.query("ALTER SYSTEM SET max_connections = 40");
    await setUp.end();
    await cluster.restartFast();
    operations = createOperations({
      // Its queues are named after the cluster's ledger, migrated here, before the harness starts on it.
      queueBackend: await queueBackendOf({
        redisUrl: process.env.REDIS_URL,
        databaseUrl: cluster.url,
        schema: "migrate",
      }),
      logger: pino({ level: "silent" }),
    });
    harness = await startGatewayHarness({
      database: { url: cluster.url, name: "postgres", drop: async () => {} },
      billing: { redisUrl: process.env.REDIS_URL },
      service: { operationsRouter: (parts) => operations.router(parts) },
    });
    key = (await harness.issueKey(await harness.session("steady"))).key;
    await harness.topUp({ kind: "user", id: "steady" }, creditWon);
  }, 60_000);
  afterAll(async () => {
    await Promise.all(taken.splice(0).map((client) => client.end().catch(() => {})));
    await operations?.close();
    await harness?.close();
    await cluster?.drop();
  });

  const readiness = async () => {
    const response = await fetch(`${harness.url}/health/ready`, { signal: AbortSignal.timeout(10_000) });
    return {
      status: response.status,
      body: (await response.json()) as { failing: string[]; checks: Record<string, { reason?: string }> },
    };
  };
  const chat = (streamed: boolean) =>
    sendChat(harness.baseUrl, { account: "steady", key, streamed, timeoutMs: 30_000 });

  /** Opens connections until the server refuses one; answers the refusal's SQLSTATE. */
  async function takeEveryConnection(): Promise<string> {
    for (;;) {
      const client = new pg.Client({ connectionString: cluster.url, application_name: otherApplication });
      // A refused connection's client may still report the error after connect() rejected.
      client.on("error", () => {});
      try {
        await client.connect();
        taken.push(client);
      } catch (error) {
        return String((error as { code?: unknown }).code);
      }
    }
  }

  /** The gateway's backends, ended, and their slots taken before it opens new ones: until it holds none. */
  async function leaveTheGatewayNoConnection(): Promise<string> {
    let refusal = await takeEveryConnection();
    for (let round = 0; round < 20; round++) {
      const { rows } = await taken[0]!.query<{ ended: number }>(
        `SELECT count(pg_terminate_backend(pid))::int AS ended FROM pg_stat_activity
         WHERE backend_type = 'client backend' AND pid <> pg_backend_pid() AND application_name <> $1`,
        [otherApplication],
      );
      if (rows[0]!.ended === 0) return refusal;
      // The ended backends' slots free as they exit: taken as they do.
      for (const deadlineMs = Date.now() + 500; Date.now() < deadlineMs; )
        refusal = await takeEveryConnection();
    }
    throw new Error("the gateway kept connecting faster than its slots could be taken");
  }

  it("refuses 503/300 while no connection is to be had, says so in readiness, and serves again once freed", async () => {
    const outcomes: GenerationOutcome[] = [];
    for (const streamed of [false, true]) outcomes.push(await chat(streamed));
    expect(outcomes.map((outcome) => outcome.status)).toEqual([200, 200]);
    expect((await readiness()).status).toBe(200);

    expect(await leaveTheGatewayNoConnection()).toBe("53300");
    const upstreamCallsBefore = harness.simulator.receivedRequestCount();
    const whileExhausted: GenerationOutcome[] = [];
    for (let index = 0; index < requestsWhileExhausted; index++)
      whileExhausted.push(await chat(index % 2 === 0));
    const upstreamCallsWhileExhausted = harness.simulator.receivedRequestCount() - upstreamCallsBefore;
    const duringExhaustion = await readiness();
    // The account's own reads are refused alike, never a 500.
    const balance = await callJson(harness.url, "GET", "/llm/balance", await harness.session("steady"));
    outcomes.push(...whileExhausted);

    await Promise.all(taken.splice(0).map((client) => client.end()));
    const freedAtMs = Date.now();
    await expect.poll(async () => (await readiness()).status, { timeout: 30_000, interval: 250 }).toBe(200);
    const after: GenerationOutcome[] = [];
    for (const streamed of [false, true, false, true]) after.push(await chat(streamed));
    outcomes.push(...after);

    for (const outcome of whileExhausted) {
      expectLedgerUnavailable(outcome);
      expect(outcome.tookMs).toBeLessThan(5_000);
    }
    // The first may have started upstream beside its hold; after it, each holds first.
    expect(upstreamCallsWhileExhausted).toBeLessThanOrEqual(1);
    expect(duringExhaustion.status).toBe(503);
    expect(duringExhaustion.body.failing).toContain("postgresql");
    expect(duringExhaustion.body.checks.postgresql?.reason).toBe("unreachable");
    expect(balance).toEqual({
      status: 503,
      body: expect.objectContaining({
        status: 300,
        message: "The billing ledger is unavailable; try again shortly",
      }),
    });
    expect(after.map((outcome) => outcome.status)).toEqual([200, 200, 200, 200]);
    expect(Date.now() - freedAtMs).toBeLessThan(30_000);

    await expectBilledAsAnswered(harness.service.ledger, outcomes);
    await expectBalanceIsCreditLessCharges(
      harness.service.ledger.pool,
      { kind: "user", id: "steady" },
      creditWon,
    );
  }, 180_000);
});
