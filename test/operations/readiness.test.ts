import { randomUUID } from "node:crypto";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allProjections } from "../../projections";
import type { QueueBackend } from "../../src/billing/queue/queue-backend";
import { modelFamilies } from "../../src/config";
import { openLedger } from "../../src/ledger/store/open-ledger";
import { createDependencyProbes, type DependencyProbes } from "../../src/operations/dependency-probes";
import { createOperations, type Operations } from "../../src/operations/operations";
import { Readiness, type ReadinessReport } from "../../src/operations/readiness";
import type { ModelFamily } from "../../src/providers/provider";
import { type RunningService, startService } from "../../src/service";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { testSecrets } from "../support/gateway-harness";
import { startTcpProxy, type TcpProxy } from "../support/tcp-proxy";
import { eventually, removeQueueData } from "../workers/queue-test-support";

/**
 * C11 readiness against real PostgreSQL and the real queue store. Each dependency is reached through a
 * TCP proxy the test can cut, as a stopped server or a dead host looks to the gateway, and restore;
 * servers other tests share are never stopped.
 */

const logger = pino({ level: "silent" });
const upstreams = Object.fromEntries(
  modelFamilies.map((family) => [family, { baseUrl: "http://127.0.0.1:9", apiKey: "unused" }]),
) as Record<ModelFamily, { baseUrl: string; apiKey: string }>;

interface Deployment {
  database: TestDatabase;
  postgresProxy: TcpProxy;
  redisProxy: TcpProxy | undefined;
  queueBackend: QueueBackend;
  operations: Operations;
  service: RunningService;
  url: string;
  close(): Promise<void>;
}

async function startDeployment(queue: "postgresql" | "redis"): Promise<Deployment> {
  const database = await createTestDatabase(`ready_${queue}`);
  const postgresProxy = await startTcpProxy(hostAndPortOf(database.url));
  const databaseUrl = postgresProxy.urlFor(database.url);
  const redisUrl = process.env.REDIS_URL;
  const redisProxy = queue === "redis" && redisUrl ? await startTcpProxy(hostAndPortOf(redisUrl)) : undefined;
  const queueBackend: QueueBackend = redisProxy
    ? { kind: "redis", redisUrl: redisProxy.urlFor(redisUrl!), prefix: `test-${randomUUID()}` }
    : { kind: "postgresql", databaseUrl };
  const operations = createOperations({
    queueBackend,
    logger,
    // A cut dependency fails its probe at once (unreachable); the bound only has to outlast a loaded
    // machine's slowest answer of a live one.
    bounds: { probeTimeoutMs: 5_000 },
  });
  const service = await startService({
    databaseUrl,
    ...testSecrets,
    upstreams,
    charges: { enqueueCharge: () => {} },
    requestBodyBytesMax: 1024 * 1024,
    logger,
    operationsRouter: (parts) => operations.router(parts),
  });
  const { url } = await service.listen(0, "127.0.0.1");
  return {
    database,
    postgresProxy,
    redisProxy,
    queueBackend,
    operations,
    service,
    url,
    async close() {
      await postgresProxy.restore();
      await redisProxy?.restore();
      await operations.close();
      await service.close();
      await postgresProxy.close();
      await redisProxy?.close();
      if (redisUrl) await removeQueueData({ ...queueBackend, ...(redisProxy ? { redisUrl } : {}) });
      await database.drop();
    },
  };
}

function hostAndPortOf(url: string): { host: string; port: number } {
  const parsed = new URL(url);
  return { host: parsed.hostname, port: Number(parsed.port || (parsed.protocol === "redis:" ? 6379 : 5432)) };
}

async function ready(url: string): Promise<{ status: number; body: ReadinessReport }> {
  const response = await fetch(`${url}/health/ready`);
  return { status: response.status, body: (await response.json()) as ReadinessReport };
}

const queueCases = ["postgresql", ...(process.env.REDIS_URL ? ["redis" as const] : [])] as const;

describe.each(queueCases)("readiness with the queue on %s", (queue) => {
  let deployment: Deployment;
  beforeAll(async () => {
    deployment = await startDeployment(queue);
  });
  afterAll(async () => {
    await deployment?.close();
  });

  it("GET /health/live answers 200 {status: ok} whatever the dependencies", async () => {
    await deployment.postgresProxy.cut();
    try {
      const response = await fetch(`${deployment.url}/health/live`);
      expect(response.status).toBe(200);
      expect(await response.json()).toEqual({ status: "ok" });
    } finally {
      await deployment.postgresProxy.restore();
    }
  });

  it("is ready once PostgreSQL, the queue and the projections are usable", async () => {
    await eventually("ready", async () => (await ready(deployment.url)).status === 200);
    const { body } = await ready(deployment.url);
    expect(body).toMatchObject({
      status: "ready",
      failing: [],
      checks: {
        postgresql: { status: "ok" },
        queue: { status: "ok", depth: { waiting: expect.any(Number), active: expect.any(Number) } },
        projections: { status: "ok", lagSecondsMax: 30 },
        process: { status: "ok" },
      },
    });
  });

  it("answers 503 naming PostgreSQL while it is unreachable, and 200 once it is back", async () => {
    await eventually("ready", async () => (await ready(deployment.url)).status === 200);
    await deployment.postgresProxy.cut();
    const down = await ready(deployment.url);
    expect(down.status).toBe(503);
    expect(down.body.status).toBe("not ready");
    expect(down.body.failing).toContain("postgresql");
    expect(down.body.checks.postgresql).toEqual({ status: "failing", reason: "unreachable" });
    expect(JSON.stringify(down.body)).not.toContain(String(deployment.postgresProxy.port));
    await deployment.postgresProxy.restore();
    await eventually("ready again", async () => (await ready(deployment.url)).status === 200);
  });

  it("answers 503 naming the queue while its store is unreachable, and 200 once it is back", async () => {
    await eventually("ready", async () => (await ready(deployment.url)).status === 200);
    const proxy = deployment.redisProxy ?? deployment.postgresProxy;
    await proxy.cut();
    const down = await ready(deployment.url);
    expect(down.status).toBe(503);
    expect(down.body.failing).toContain("queue");
    if (deployment.redisProxy) expect(down.body.failing).toEqual(["queue"]);
    await proxy.restore();
    await eventually("ready again", async () => (await ready(deployment.url)).status === 200);
  });

  it("answers 503 naming the process once draining has started", async () => {
    await eventually("ready", async () => (await ready(deployment.url)).status === 200);
    deployment.operations.readiness.startDraining();
    const draining = await ready(deployment.url);
    expect(draining.status).toBe(503);
    expect(draining.body.failing).toEqual(["process"]);
    expect(draining.body.checks.process).toEqual({ status: "failing", reason: "draining" });
  });
});

describe("projection lag", () => {
  it("counts from the oldest event a projection has not applied, against the named bound", async () => {
    const database = await createTestDatabase("ready_lag");
    try {
      // A service prepares the projections, then stops: what is appended afterwards stays unapplied.
      const service = await startService({
        databaseUrl: database.url,
        ...testSecrets,
        upstreams,
        charges: { enqueueCharge: () => {} },
        requestBodyBytesMax: 1024 * 1024,
        logger,
      });
      await service.close();
      const ledger = await openLedger({ databaseUrl: database.url, applicationName: "lag-test" });
      try {
        let now = new Date();
        const probes = createDependencyProbes({
          pool: ledger.pool,
          store: ledger.store,
          queueBackend: { kind: "postgresql", databaseUrl: database.url },
          clock: () => now,
        });
        const readiness = new Readiness({ probeTimeoutMs: 2_000, projectionLagSecondsMax: 30 });
        readiness.attach(probes);
        expect(await probes.projectionLagSeconds()).toBe(0);

        const appended = await ledger.store.append({
          streamId: "account-user-lagging",
          expectedVersion: "any",
          events: [
            {
              eventId: randomUUID(),
              event: {
                type: "CreditToppedUp",
                data: { account: { kind: "user", id: "lagging" }, amountWon: "1", reference: "lag" },
                metadata: { actor: "test", occurredAt: new Date().toISOString() },
              },
            },
          ],
        });
        const [recorded] = await ledger.store.readStream(appended.streamId);
        now = new Date(recorded!.recordedAt.getTime() + 31_000);
        // Readers see an event once every older transaction on the server has ended (docs/ledger.md, "Rebuilds"): wait for it.
        await eventually(
          "the event is visible to readers",
          async () => (await probes.projectionLagSeconds()) > 0,
        );
        expect(await probes.projectionLagSeconds()).toBeCloseTo(31, 3);
        const report = await readiness.check();
        expect(report.failing).toEqual(["projections"]);
        expect(report.checks.projections).toMatchObject({
          status: "failing",
          lagSeconds: expect.closeTo(31, 3),
          lagSecondsMax: 30,
        });

        now = new Date(recorded!.recordedAt.getTime() + 29_000);
        expect((await readiness.check()).failing).toEqual([]);

        // One projection past the event hides nothing: the lag is the one furthest behind's.
        now = new Date(recorded!.recordedAt.getTime() + 31_000);
        const [ahead, ...behind] = allProjections;
        await ledger.pool.query(
          "UPDATE projection_checkpoints SET commit_position = $1, prepare_position = $2 WHERE projection = $3",
          [String(recorded!.position.commit), String(recorded!.position.prepare), ahead!.name],
        );
        expect(behind.length).toBeGreaterThan(0);
        expect(await probes.projectionLagSeconds()).toBeCloseTo(31, 3);
        expect((await readiness.check()).failing).toEqual(["projections"]);
        await probes.close();
      } finally {
        await ledger.close();
      }
    } finally {
      await database.drop();
    }
  });

  it("is not ready before the projections are prepared", async () => {
    const readiness = new Readiness({ probeTimeoutMs: 1_000, projectionLagSecondsMax: 30 });
    const report = await readiness.check();
    expect(report.status).toBe("not ready");
    expect(report.failing).toEqual(["postgresql", "queue", "projections"]);
  });
});

describe("a dependency that never answers", () => {
  it("given a dependency that never answers, then readiness answers within the probe bound, naming it as timed out", async () => {
    // A dead host's packets dropped rather than refused: the probe neither resolves nor rejects. Each of
    // PostgreSQL, the queue and the projections in turn hangs while the others answer.
    const never = () => new Promise<never>(() => {});
    const answering: DependencyProbes = {
      postgresql: async () => {},
      queueDepth: async () => ({ waiting: 0, active: 0, delayed: 0, failed: 0 }),
      projectionLagSeconds: async () => 0,
      holdsLogLagSeconds: async () => 0,
      pendingChargeAgeSeconds: async () => 0,
      close: async () => {},
    };
    const hung = [
      ["postgresql", { postgresql: never }],
      ["queue", { queueDepth: never }],
      ["projections", { projectionLagSeconds: never }],
    ] as const;
    for (const [name, hanging] of hung) {
      const readiness = new Readiness({ probeTimeoutMs: 100, projectionLagSecondsMax: 30 });
      readiness.attach({ ...answering, ...hanging });
      const report = await readiness.check();
      expect(report.status).toBe("not ready");
      expect(report.failing).toEqual([name]);
      expect(report.checks[name]).toEqual({ status: "failing", reason: "timed out" });
    }
  }, 10_000);
});
