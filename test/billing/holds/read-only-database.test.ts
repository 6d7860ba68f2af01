import pg from "pg";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
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
import { settlementsWaiting } from "../../support/settlements-waiting";

/**
 * The database turns read-only under load (a failover left the gateway's address on a demoted primary:
 * `default_transaction_read_only` on, every connection still open and answering reads). C3: no generation
 * without a hold, so requests are refused 503/300 and reach no upstream once the gateway knows; readiness
 * says the database is not usable; the answers already under way, whose usage cannot be written meanwhile,
 * and the settled rows waiting for the log are written once it is writable again, with no restart — every
 * request billed as it ended, once.
 */

/** About ten requests a second, each about half a second long. */
const arrivalIntervalMs = 100;
const readOnlyForMs = 5_000;
const creditWon = "100000";

describe("a database that turns read-only", () => {
  let cluster: PrivatePostgresCluster;
  let harness: GatewayHarness;
  let operator: pg.Client;
  let operations: Operations;
  let key = "";

  beforeAll(async () => {
    if (!process.env.REDIS_URL) throw new Error("REDIS_URL must be set for the read-only test");
    cluster = await createPrivatePostgresCluster("read_only");
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
      // About half a second an answer: some are always under way when the database turns.
      simulator: { tokensPerSecond: 40 },
      service: { operationsRouter: (parts) => operations.router(parts) },
    });
    key = (await harness.issueKey(await harness.session("steady"))).key;
    await harness.topUp({ kind: "user", id: "steady" }, creditWon);
    operator = new pg.Client({ connectionString: cluster.url });
    await operator.connect();
  }, 60_000);
  afterAll(async () => {
    await operator?.end();
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
  const setReadOnly = async (readOnly: boolean) => {
    await operator.query(
      readOnly
        ? "ALTER SYSTEM SET default_transaction_read_only = on"
        : "ALTER SYSTEM RESET default_transaction_read_only",
    );
    await operator.query("SELECT pg_reload_conf()");
  };

  it("refuses 503/300 while read-only, says so in readiness, and bills every request once when writable again", async () => {
    expect((await readiness()).status).toBe(200);
    // Requests arrive at a steady rate whatever became of the earlier ones: answers under way wait for
    // their usage while the database is read-only, and a client waiting for its answer would send nothing.
    const sent: Promise<GenerationOutcome>[] = [];
    const arrivals = setInterval(() => {
      sent.push(
        sendChat(harness.baseUrl, {
          account: "steady",
          key,
          streamed: sent.length % 2 === 0,
          timeoutMs: 60_000,
        }),
      );
    }, arrivalIntervalMs);
    await new Promise((resolve) => setTimeout(resolve, 1_500));

    await setReadOnly(true);
    const readOnlyAtMs = Date.now();
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const upstreamCallsBefore = harness.simulator.receivedRequestCount();
    const duringOutage = await readiness();
    // A write beside the generation endpoints (a key issued) is refused alike, never a 500.
    const keyIssued = await callJson(harness.url, "POST", "/llm/apis", await harness.session("steady"), {
      name: "while read-only",
      isOrganization: false,
    });
    await new Promise((resolve) => setTimeout(resolve, readOnlyForMs - 1_000));
    const upstreamCallsWhileReadOnly = harness.simulator.receivedRequestCount() - upstreamCallsBefore;
    // Settled rows and answered usage wait meanwhile, in the rows and in the gateway's memory.
    const waitingRows = (
      await operator.query<{ count: number }>("SELECT count(*)::int AS count FROM request_holds")
    ).rows[0]!.count;
    const turningBackAtMs = Date.now();
    await setReadOnly(false);
    const writableAtMs = Date.now();

    await new Promise((resolve) => setTimeout(resolve, 3_000));
    clearInterval(arrivals);
    const outcomes = await Promise.all(sent);
    expect((await readiness()).status).toBe(200);

    expect(duringOutage.status).toBe(503);
    expect(duringOutage.body.failing).toContain("postgresql");
    expect(duringOutage.body.checks.postgresql?.reason).toBe("read-only");
    expect(keyIssued).toEqual({
      status: 503,
      body: expect.objectContaining({
        status: 300,
        message: "The billing ledger is unavailable; try again shortly",
      }),
    });
    // Refused with C3's body, never a 500; nothing cut, nothing left without an answer.
    const refused = outcomes.filter((outcome) => outcome.status !== 200);
    for (const outcome of refused) expectLedgerUnavailable(outcome);
    // Every request sent while read-only, once the gateway had met it, refused without reaching the upstream;
    // one whose hold was still being tried at the turn back (on a loaded machine a refusal can take a second)
    // may be held then and answered, but never before it.
    const sentWhileReadOnly = outcomes.filter(
      (outcome) => outcome.startedAtMs > readOnlyAtMs + 1_000 && outcome.startedAtMs < turningBackAtMs,
    );
    expect(sentWhileReadOnly.filter((outcome) => outcome.status === 503).length).toBeGreaterThan(20);
    expect(
      sentWhileReadOnly.filter(
        (outcome) =>
          outcome.status !== 503 &&
          !(outcome.status === 200 && outcome.startedAtMs + outcome.tookMs > writableAtMs),
      ),
    ).toEqual([]);
    expect(upstreamCallsWhileReadOnly).toBe(0);
    // Served again once writable.
    expect(
      outcomes.filter((outcome) => outcome.startedAtMs > writableAtMs + 1_000 && outcome.status !== 200),
    ).toEqual([]);
    expect(waitingRows).toBeGreaterThan(0);

    await expectBilledAsAnswered(harness.service.ledger, outcomes);
    await expectBalanceIsCreditLessCharges(
      harness.service.ledger.pool,
      { kind: "user", id: "steady" },
      creditWon,
    );
  }, 180_000);

  it("given refusals while read-only, then they leave nothing to write: a hold the server refused was never placed", async () => {
    // The server answered each hold statement with an error, so its transaction rolled back: unlike a
    // connection lost around a commit, there is no hold that might exist and need voiding.
    await setReadOnly(true);
    try {
      await vi.waitFor(async () => expect((await readiness()).status).toBe(503), {
        timeout: 10_000,
        interval: 100,
      });
      const refused: GenerationOutcome[] = [];
      for (let index = 0; index < 6; index++)
        refused.push(
          await sendChat(harness.baseUrl, {
            account: "steady",
            key,
            streamed: index % 2 === 0,
            timeoutMs: 30_000,
          }),
        );
      for (const outcome of refused) expectLedgerUnavailable(outcome);
      expect(await settlementsWaiting()).toBe(0);
    } finally {
      await setReadOnly(false);
    }
  }, 60_000);
});
