import { randomUUID } from "node:crypto";
import { createServer as createHttpServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createServer as createTcpServer, type Socket, type Server as TcpServer } from "node:net";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { alertSettingsProjection } from "../../../projections/alert-settings";
import { type HostLookup, systemHostLookup } from "../../../src/billing/alerts/webhook-address";
import { sweepRemovedEndpoints } from "../../../src/billing/alerts/webhook-outbox";
import { webhookLimits } from "../../../src/kernel/limits";
import { metricsText } from "../../../src/kernel/metrics-registry";
import { type RunningWebhookWorker, startWebhookWorker } from "../../../workers/deliver-webhooks";
import { sampleValue } from "../../operations/prometheus-text";
import { type GatewayHarness, startGatewayHarness } from "../../support/gateway-harness";
import { callJson as call } from "../../support/json-call";

/**
 * Webhook delivery when receivers misbehave and removals are cut short (C14): a receiver that drips its
 * answer a byte at a time holds one attempt until its deadline and nobody else; one whose name server never
 * answers holds its attempt for the look-up's bound, not the whole deadline, and nobody else either; a
 * stopping worker ends its attempts at once; the messages of an endpoint whose removal stopped after its
 * event take no slot from live endpoints, and the workers' sweep cancels them and deletes the secret. Real
 * gateway, PostgreSQL and receivers on 127.0.0.1; the name server is the test's.
 */

const logger = pino({ level: "silent" });
const attemptTimeoutMs = 5_000;

/** Answers every POST at once with 204, keeping the ids it got. */
function startHealthyReceiver() {
  const received: string[] = [];
  const server: Server = createHttpServer((request, response) => {
    request.resume();
    request.on("end", () => {
      received.push(String(request.headers["webhook-id"]));
      response.writeHead(204).end();
    });
  });
  return { received, server };
}

/** Answers every POST at once with `status` (500 by default) and `headers`, counting them. */
function startFailingReceiver(status = 500, headers: Record<string, string> = {}) {
  let answered = 0;
  const server: Server = createHttpServer((request, response) => {
    request.resume();
    request.on("end", () => {
      answered++;
      response.writeHead(status, headers).end();
    });
  });
  return { server, answered: () => answered };
}

/** Reads the request, then sends its answer's status line and headers one byte every 200 ms, forever. */
function startDrippingReceiver() {
  const sockets = new Set<Socket>();
  const server: TcpServer = createTcpServer((socket) => {
    sockets.add(socket);
    socket.on("error", () => {});
    socket.on("close", () => sockets.delete(socket));
    const answer = `HTTP/1.1 200 OK\r\nX-Slow: ${"a".repeat(100_000)}`;
    let sent = 0;
    const drip = setInterval(() => {
      if (socket.destroyed) return clearInterval(drip);
      socket.write(answer[sent++ % answer.length]!);
    }, 200);
    socket.on("close", () => clearInterval(drip));
  });
  return { sockets, server };
}

async function listen(server: Server | TcpServer): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
}

async function until(what: string, condition: () => boolean | Promise<boolean>, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

let harness: GatewayHarness;
const healthy = startHealthyReceiver();
const dripping = startDrippingReceiver();
const failing = startFailingReceiver();
const gone = startFailingReceiver(410);
const busy = startFailingReceiver(503, { "retry-after": "120" });
let healthyUrl = "";
let drippingUrl = "";
let failingUrl = "";
let goneUrl = "";
let busyUrl = "";

beforeAll(async () => {
  healthyUrl = await listen(healthy.server);
  drippingUrl = await listen(dripping.server);
  failingUrl = await listen(failing.server);
  goneUrl = await listen(gone.server);
  busyUrl = await listen(busy.server);
  harness = await startGatewayHarness({
    label: "webhook_faults",
    service: { webhookAllowPrivateNetworks: true },
  });
}, 120_000);

afterAll(async () => {
  for (const socket of dripping.sockets) socket.destroy();
  await new Promise((resolve) => dripping.server.close(resolve));
  healthy.server.closeAllConnections();
  await new Promise((resolve) => healthy.server.close(resolve));
  failing.server.closeAllConnections();
  await new Promise((resolve) => failing.server.close(resolve));
  gone.server.closeAllConnections();
  await new Promise((resolve) => gone.server.close(resolve));
  busy.server.closeAllConnections();
  await new Promise((resolve) => busy.server.close(resolve));
  await harness?.close();
});

async function addWebhook(userId: string, url: string, events: string[] = ["statement.closed"]) {
  const token = await harness.session(userId);
  const added = await call(harness.url, "POST", "/llm/webhooks", token, { url, events });
  expect(added.status).toBe(201);
  return { token, webhookId: String(added.body.id) };
}

async function sendTest(token: string, webhookId: string): Promise<string> {
  const sent = await call(harness.url, "POST", `/llm/webhooks/${webhookId}/test`, token);
  expect(sent.status).toBe(202);
  return String(sent.body.id);
}

async function deliveryRow(deliveryId: string) {
  const result = await harness.service.ledger.pool.query<{
    status: string;
    attempts: number;
    last_error: string | null;
    leased_until: Date | null;
    next_attempt_at: Date;
  }>(
    `SELECT status, attempts, last_error, leased_until, next_attempt_at
     FROM webhook_deliveries WHERE delivery_id = $1`,
    [deliveryId],
  );
  return result.rows[0]!;
}

function startWorker(overrides: Parameters<typeof startWebhookWorker>[2] = {}): RunningWebhookWorker {
  return startWebhookWorker(harness.service.ledger.pool, logger, {
    pollIntervalMs: 50,
    balanceCheckIntervalMs: 50,
    retryDelaysMs: [60_000],
    attemptTimeoutMs,
    allowPrivateNetworks: true,
    ...overrides,
  });
}

describe("webhook delivery when receivers misbehave", () => {
  it("given a receiver answering 500, then /metrics counts each attempt: retried while the window lasts, failed once it is over", async () => {
    const attempts = async (outcome: string) =>
      sampleValue((await metricsText()).text, "won_gateway_webhook_attempts_total", { outcome });
    const before = { retried: await attempts("retried"), failed: await attempts("failed") };
    const down = await addWebhook("down-owner", failingUrl);
    const worker = startWorker({ retryDelaysMs: [0], retryWindowMs: 1_500 });
    try {
      const deliveryId = await sendTest(down.token, down.webhookId);

      await until(
        "the message failed for good",
        async () => (await deliveryRow(deliveryId)).status === "failed",
      );

      const { attempts: made } = await deliveryRow(deliveryId);
      expect(made).toBeGreaterThan(1);
      expect(await attempts("retried")).toBe(before.retried + made - 1);
      expect(await attempts("failed")).toBe(before.failed + 1);
    } finally {
      await worker.close();
    }
  }, 30_000);

  it("given a receiver answering 410 Gone, then its message is given up at that attempt, not retried for the window", async () => {
    const attempts = async (outcome: string) =>
      sampleValue((await metricsText()).text, "won_gateway_webhook_attempts_total", { outcome });
    const failedBefore = await attempts("failed");
    const retiredEndpoint = await addWebhook("gone-owner", goneUrl);
    const worker = startWorker({ retryDelaysMs: [0] });
    try {
      const deliveryId = await sendTest(retiredEndpoint.token, retiredEndpoint.webhookId);

      await until("the receiver answered", () => gone.answered() >= 1);
      await until("the attempt was recorded", async () => (await deliveryRow(deliveryId)).attempts >= 1);
      // Retried at once were it not final: several polls of 50 ms.
      await new Promise((resolve) => setTimeout(resolve, 500));

      expect(await deliveryRow(deliveryId)).toMatchObject({ status: "failed", attempts: 1 });
      expect(gone.answered()).toBe(1);
      expect(await attempts("failed")).toBe(failedBefore + 1);
    } finally {
      await worker.close();
    }
  }, 30_000);

  it("given a receiver answering 503 with Retry-After, then the next attempt waits that long, not the schedule's shorter delay", async () => {
    const loaded = await addWebhook("busy-owner", busyUrl);
    const worker = startWorker({ retryDelaysMs: [0] });
    try {
      const deliveryId = await sendTest(loaded.token, loaded.webhookId);

      await until("the attempt was recorded", async () => (await deliveryRow(deliveryId)).attempts >= 1);
      const failedAtMs = Date.now();
      await new Promise((resolve) => setTimeout(resolve, 500));

      const row = await deliveryRow(deliveryId);
      expect(row).toMatchObject({ status: "pending", attempts: 1, last_error: "receiver answered 503" });
      expect(busy.answered()).toBe(1);
      expect(row.next_attempt_at.getTime() - failedAtMs).toBeGreaterThan(115_000);
      expect(row.next_attempt_at.getTime() - failedAtMs).toBeLessThan(125_000);
    } finally {
      await worker.close();
    }
  }, 30_000);

  it("given a receiver that drips its answer, then its attempt ends at the deadline, and meanwhile other receivers get theirs and low funds are still found", async () => {
    const slow = await addWebhook("drip-owner", drippingUrl);
    const fine = await addWebhook("fine-owner", healthyUrl, ["balance.low"]);
    // A deadline that outlasts what must happen meanwhile, on a loaded machine too: the top-up's and the
    // threshold's answers each wait for the projections, and so for other files' transactions.
    const dripTimeoutMs = 12_000;
    const worker = startWorker({ attemptTimeoutMs: dripTimeoutMs });
    try {
      const slowDelivery = await sendTest(slow.token, slow.webhookId);
      await until("the slow attempt started", () => dripping.sockets.size > 0);
      const startedAtMs = Date.now();

      const fineDelivery = await sendTest(fine.token, fine.webhookId);
      await until("the other receiver got its message", () => healthy.received.includes(fineDelivery), 5_000);
      await harness.topUp({ kind: "user", id: "fine-owner" }, "1000");
      const threshold = await call(harness.url, "PUT", "/llm/alerts", fine.token, {
        balanceBelowWon: "5000",
      });
      expect(threshold.status).toBe(200);
      await until(
        "the low-funds alert was written",
        async () =>
          (
            await harness.service.ledger.pool.query(
              "SELECT 1 FROM webhook_deliveries WHERE webhook_id = $1 AND event_type = 'balance.low'",
              [fine.webhookId],
            )
          ).rowCount === 1,
        5_000,
      );
      // All of that happened while the slow attempt was still running: its receiver still connected, its
      // attempt not yet counted.
      expect(dripping.sockets.size).toBeGreaterThan(0);
      expect((await deliveryRow(slowDelivery)).attempts).toBe(0);

      await until(
        "the slow attempt ended",
        async () => (await deliveryRow(slowDelivery)).attempts === 1,
        dripTimeoutMs + 5_000,
      );
      expect(Date.now() - startedAtMs).toBeLessThan(dripTimeoutMs + 2_000);
      expect(await deliveryRow(slowDelivery)).toMatchObject({
        status: "pending",
        last_error: `no answer within ${dripTimeoutMs} ms`,
      });
    } finally {
      await worker.close();
    }
  }, 45_000);

  it("given a receiver whose name server never answers, then its attempt fails at the look-up's bound saying so and waits for the schedule's retry, and meanwhile the account's other endpoint gets its message", async () => {
    const silentHostname = "silent-name-server.example";
    const lookupsUnanswered: (() => void)[] = [];
    const nameServer: HostLookup = async (hostname) => {
      if (hostname !== silentHostname) return systemHostLookup(hostname);
      await new Promise<void>((resolve) => lookupsUnanswered.push(resolve));
      return [{ address: "127.0.0.1", family: 4 }];
    };
    const silent = await addWebhook("silent-dns-owner", healthyUrl.replace("127.0.0.1", silentHostname));
    const fine = await addWebhook("silent-dns-owner", healthyUrl);
    // A deadline far past the look-up's bound, so that the attempt's end tells which of the two ended it.
    const worker = startWorker({
      attemptTimeoutMs: 10_000,
      hostResolutionTimeoutMs: 500,
      lookupHost: nameServer,
    });
    try {
      const silentDelivery = await sendTest(silent.token, silent.webhookId);
      await until("the silent name was asked", () => lookupsUnanswered.length > 0, 2_000);
      const startedAtMs = Date.now();

      const fineDelivery = await sendTest(fine.token, fine.webhookId);
      await until("the other endpoint got its message", () => healthy.received.includes(fineDelivery), 5_000);

      await until("the silent attempt ended", async () => (await deliveryRow(silentDelivery)).attempts === 1);
      const endedAtMs = Date.now();
      expect(endedAtMs - startedAtMs).toBeLessThan(5_000);
      const row = await deliveryRow(silentDelivery);
      expect(row).toMatchObject({
        status: "pending",
        leased_until: null,
        last_error: `url's host ${silentHostname} did not resolve within 500 ms`,
      });
      // The schedule's first delay (a minute here), as for any failed attempt.
      expect(row.next_attempt_at.getTime() - endedAtMs).toBeGreaterThan(55_000);
      expect(row.next_attempt_at.getTime() - endedAtMs).toBeLessThan(65_000);
      expect(healthy.received).not.toContain(silentDelivery);
    } finally {
      for (const answer of lookupsUnanswered) answer();
      await worker.close();
    }
  }, 30_000);

  it("given an attempt in flight, when the worker stops, then it stops at once and the message is due again, its attempt not counted", async () => {
    const slow = await addWebhook("drip-stopped", drippingUrl);
    const worker = startWorker({ attemptTimeoutMs: 60_000 });
    const deliveryId = await sendTest(slow.token, slow.webhookId);
    await until("the attempt started", async () => (await deliveryRow(deliveryId)).leased_until !== null);
    await until("the receiver has the request", () => dripping.sockets.size > 0);

    const stoppingAtMs = Date.now();
    await worker.close();

    // At once: seconds at most (a pass in flight and the lease's release), not the attempt's minute.
    expect(Date.now() - stoppingAtMs).toBeLessThan(5_000);
    expect(await deliveryRow(deliveryId)).toMatchObject({
      status: "pending",
      attempts: 0,
      leased_until: null,
    });
    await harness.service.ledger.pool.query(
      "UPDATE webhook_deliveries SET status = 'cancelled' WHERE delivery_id = $1",
      [deliveryId],
    );
  }, 30_000);

  it("given a removal cut short after its event, then its messages take no slot from live endpoints, and the sweep cancels them and deletes its secret once old", async () => {
    const pool = harness.service.ledger.pool;
    const removed = await addWebhook("removed-owner", healthyUrl);
    const orphans = [];
    for (let index = 0; index < webhookLimits.pendingTestMessagesMax; index++)
      orphans.push(await sendTest(removed.token, removed.webhookId));
    // The removal's event is logged and projected; its process died before it cancelled and deleted anything.
    const appended = await harness.service.ledger.store.append({
      streamId: `webhook-${removed.webhookId}`,
      expectedVersion: "any",
      events: [
        {
          eventId: randomUUID(),
          event: {
            type: "WebhookEndpointRemoved",
            data: { webhookId: removed.webhookId, account: { kind: "user", id: "removed-owner" } },
            metadata: { actor: "user:removed-owner", occurredAt: new Date().toISOString() },
          },
        },
      ],
    });
    await harness.service.waiter.waitFor(appended.position, [alertSettingsProjection.name], 10_000);
    const live = await addWebhook("live-owner", healthyUrl);
    const liveDelivery = await sendTest(live.token, live.webhookId);

    // A pass leases fewer rows than the removed endpoint has due, all older than the live one's.
    const worker = startWorker({ batchSizeMax: 2 });
    try {
      await until("the live endpoint got its message", () => healthy.received.includes(liveDelivery), 5_000);
    } finally {
      await worker.close();
    }
    expect(healthy.received).not.toEqual(expect.arrayContaining([orphans[0]]));

    expect(await sweepRemovedEndpoints(pool, webhookLimits.secretWithoutEndpointKeptMs)).toEqual({
      cancelled: orphans.length,
      secretsDeleted: 0,
    });
    for (const deliveryId of orphans) expect((await deliveryRow(deliveryId)).status).toBe("cancelled");
    await pool.query(
      "UPDATE webhook_secrets SET created_at = now() - interval '25 hours' WHERE webhook_id = $1",
      [removed.webhookId],
    );
    expect(await sweepRemovedEndpoints(pool, webhookLimits.secretWithoutEndpointKeptMs)).toEqual({
      cancelled: 0,
      secretsDeleted: 1,
    });
    const secrets = await pool.query<{ webhook_id: string }>(
      "SELECT webhook_id FROM webhook_secrets WHERE webhook_id = ANY($1)",
      [[removed.webhookId, live.webhookId]],
    );
    expect(secrets.rows.map((row) => row.webhook_id)).toEqual([live.webhookId]);
  }, 30_000);
});
