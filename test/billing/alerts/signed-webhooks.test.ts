import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import pino from "pino";
import { Webhook } from "standardwebhooks";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { pendingChargesTable } from "../../../projections/balances";
import { detectClosedStatements } from "../../../src/billing/alerts/statement-closed-alerts";
import { detectLowBalances } from "../../../src/billing/alerts/webhook-outbox";
import { signedHeaders } from "../../../src/billing/alerts/webhook-signing";
import { boundsOf, statementMonthOf } from "../../../src/billing/statements/statement-month";
import { webhookMessageSchemas } from "../../../src/gateway/openapi/response-schemas";
import { statementLimits, webhookLimits } from "../../../src/kernel/limits";
import { type RunningWebhookWorker, startWebhookWorker } from "../../../workers/deliver-webhooks";
import { type GatewayHarness, startGatewayHarness } from "../../support/gateway-harness";
import { callJson } from "../../support/json-call";
import { personalHoldRequest, usageAuthorizationsOf } from "../../support/usage-authorizations";

/**
 * Alerts by signed webhooks (C14) through the real gateway, PostgreSQL and a real HTTP receiver on 127.0.0.1
 * (so the gateway runs with private networks allowed, as WEBHOOK_ALLOW_PRIVATE_NETWORKS=true would), which
 * verifies every delivery with the Standard Webhooks library. The worker's retry schedule is injected (50 ms
 * steps instead of minutes to hours) so the receiver-down-then-up case takes seconds.
 */

interface Received {
  id: string;
  body: { type: string; timestamp: string; data: Record<string, unknown> };
}

/** A verified message's body, when it is not what /openapi.json's `webhooks` says that type's body is. */
function undocumentedShapeOf(body: unknown): string | undefined {
  const type = (body as { type?: string }).type as keyof typeof webhookMessageSchemas;
  const schema = webhookMessageSchemas[type];
  if (!schema) return `${String(type)}: a type /openapi.json does not list`;
  const parsed = schema.safeParse(body);
  return parsed.success ? undefined : `${type}: ${parsed.error.message}`;
}

function startReceiver(secret: () => string) {
  const received: Received[] = [];
  const undocumented: string[] = [];
  let up = false;
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      if (!up) return void response.writeHead(503).end();
      const body = Buffer.concat(chunks).toString("utf8");
      try {
        new Webhook(secret()).verify(body, request.headers as Record<string, string>);
      } catch {
        return void response.writeHead(400).end();
      }
      const parsed = JSON.parse(body) as Received["body"];
      const mismatch = undocumentedShapeOf(parsed);
      if (mismatch !== undefined) undocumented.push(mismatch);
      received.push({ id: String(request.headers["webhook-id"]), body: parsed });
      response.writeHead(204).end();
    });
  });
  return {
    received,
    undocumented,
    setUp: (value: boolean) => {
      up = value;
    },
    listen: () =>
      new Promise<string>((resolve) =>
        server.listen(0, "127.0.0.1", () =>
          resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`),
        ),
      ),
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

const fastRetries = {
  pollIntervalMs: 50,
  retryDelaysMs: [50, 100, 200],
  retryWindowMs: 60_000,
  leaseMs: 11_000,
};

/** The status of one short chat request made with `key` to the gateway at `baseUrl`. */
async function chatStatusWith(baseUrl: string, key: string): Promise<number> {
  const response = await fetch(`${baseUrl}/chat/completions`, {
    method: "POST",
    headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
    body: JSON.stringify({ model: "alpha-5.4", max_tokens: 20, messages: [{ role: "user", content: "hi" }] }),
  });
  return response.status;
}

async function until(condition: () => boolean | Promise<boolean>, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe("alerts by signed webhooks", () => {
  let harness: GatewayHarness;
  let strict: GatewayHarness;
  let secret = "";
  const receiver = startReceiver(() => secret);
  let receiverUrl = "";
  const logger = pino({ level: "silent" });

  const call = callJson;

  beforeAll(async () => {
    receiverUrl = await receiver.listen();
    harness = await startGatewayHarness({
      label: "webhooks",
      service: { webhookAllowPrivateNetworks: true },
    });
    strict = await startGatewayHarness({ label: "webhooks_strict" });
  }, 120_000);

  // Every message received, of any test, is the body /openapi.json documents for its type.
  afterEach(() => {
    expect(receiver.undocumented).toEqual([]);
  });

  afterAll(async () => {
    await receiver.close();
    await harness?.close();
    await strict?.close();
  });

  it("given an endpoint with five test messages waiting, then a sixth is 429/130 with Retry-After, and none is queued", async () => {
    const token = await harness.session("test-flood-user");
    // A receiver that never answers: nothing the worker could deliver (no worker runs here anyway).
    const added = await call(harness.url, "POST", "/llm/webhooks", token, {
      url: "http://127.0.0.1:9/never",
      events: ["balance.low"],
    });
    expect(added.status).toBe(201);
    for (let index = 0; index < 5; index++)
      expect((await call(harness.url, "POST", `/llm/webhooks/${added.body.id}/test`, token)).status).toBe(
        202,
      );

    const refused = await fetch(`${harness.url}/llm/webhooks/${added.body.id}/test`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}` },
    });

    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({ status: 130, error: { type: "rate_limit_error" } });
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);
    const queued = await harness.service.ledger.pool.query(
      "SELECT 1 FROM webhook_deliveries WHERE webhook_id = $1 AND event_type = 'webhook.test'",
      [added.body.id],
    );
    expect(queued.rowCount).toBe(5);
  });

  it("given 40 test messages sent at once to each of three endpoints, then five of each are queued and the rest 429/130", async () => {
    const token = await harness.session("test-burst-user");
    const endpointIds: string[] = [];
    for (let index = 0; index < 3; index++) {
      const added = await call(harness.url, "POST", "/llm/webhooks", token, {
        url: `http://127.0.0.1:9/never?endpoint=${index}`,
        events: ["balance.low"],
      });
      endpointIds.push(added.body.id as string);
    }
    const sendTest = async (webhookId: string) => {
      const sent = await fetch(`${harness.url}/llm/webhooks/${webhookId}/test`, {
        method: "POST",
        headers: { authorization: `Bearer ${token}` },
      });
      return { webhookId, status: sent.status };
    };
    const sent = await Promise.all(
      endpointIds.flatMap((webhookId) => Array.from({ length: 40 }, () => sendTest(webhookId))),
    );
    for (const webhookId of endpointIds) {
      const statuses = sent.filter((one) => one.webhookId === webhookId).map((one) => one.status);
      const queued = await harness.service.ledger.pool.query(
        "SELECT 1 FROM webhook_deliveries WHERE webhook_id = $1 AND event_type = 'webhook.test'",
        [webhookId],
      );
      expect({
        accepted: statuses.filter((status) => status === 202).length,
        refused: statuses.filter((status) => status === 429).length,
        queued: queued.rowCount,
      }).toEqual({
        accepted: webhookLimits.pendingTestMessagesMax,
        refused: 40 - webhookLimits.pendingTestMessagesMax,
        queued: webhookLimits.pendingTestMessagesMax,
      });
    }
  });

  it("given 30 endpoints added at once to one account, then 20 are added and the rest refused 400/100", async () => {
    const token = await harness.session("many-endpoints-user");
    const replies = await Promise.all(
      Array.from({ length: 30 }, (_, index) =>
        call(harness.url, "POST", "/llm/webhooks", token, {
          url: `${receiverUrl}?endpoint=${index}`,
          events: ["balance.low"],
        }),
      ),
    );
    const statuses = replies.map((reply) => reply.status);
    expect(statuses.filter((status) => status === 201)).toHaveLength(webhookLimits.endpointsPerAccountMax);
    for (const refused of replies.filter((reply) => reply.status !== 201))
      expect(refused).toMatchObject({ status: 400, body: { status: 100 } });
    const listed = await call(harness.url, "GET", "/llm/webhooks", token);
    expect(listed.body.data).toHaveLength(webhookLimits.endpointsPerAccountMax);
  });

  it("given no WEBHOOK_ALLOW_PRIVATE_NETWORKS, when a webhook on a loopback or private address is added, then 400/100", async () => {
    const token = await strict.session("private-url-user");
    for (const url of [
      receiverUrl,
      "http://10.1.2.3/hook",
      "http://169.254.169.254/latest",
      "http://[::1]:9/x",
      // 127.0.0.1 as a URL may also write it: decimal, hex, octal, short, IPv4-mapped IPv6.
      "http://2130706433/",
      "http://0x7f.1/",
      "http://017700000001/",
      "http://127.1/",
      "http://[::ffff:127.0.0.1]/",
      "http://[fe80::1]/",
      "http://0/",
      // Credentials in the URL, or an @ that makes a public-looking address the user name.
      "http://user:secret@8.8.8.8/",
      "http://8.8.8.8@127.0.0.1/",
    ]) {
      const reply = await call(strict.url, "POST", "/llm/webhooks", token, { url, events: ["balance.low"] });
      expect(reply.status, url).toBe(400);
      expect(reply.body).toMatchObject({ status: 100 });
    }
  });

  it("given a name on the gateway's own network, when it is refused, then the refusal does not say the address it resolves to", async () => {
    const token = await strict.session("internal-name-user");

    const reply = await call(strict.url, "POST", "/llm/webhooks", token, {
      url: "http://localhost:9/x",
      events: ["balance.low"],
    });

    expect(reply).toMatchObject({ status: 400, body: { status: 100 } });
    const message = JSON.stringify(reply.body);
    expect(message).toContain("localhost");
    // What an internal name resolves to is the deployment's, not the client's, to know.
    expect(message).not.toMatch(/127\.0\.0\.1|::1/);
  });

  it("given a threshold too long, too precise, too large or negative, then 400/100, and a valid one is kept in its one form", async () => {
    const token = await harness.session("threshold-user");
    // 16,384 decimals: past what PostgreSQL's NUMERIC holds, so an event carrying it would stop every
    // projection that casts it.
    for (const balanceBelowWon of [`0.${"1".repeat(16_384)}`, "1.005", "1000000000001", "-1", "1e3"]) {
      const reply = await call(harness.url, "PUT", "/llm/alerts", token, { balanceBelowWon });
      expect(reply.status, balanceBelowWon.slice(0, 20)).toBe(400);
      expect(reply.body).toMatchObject({ status: 100 });
    }
    const kept = await call(harness.url, "PUT", "/llm/alerts", token, { balanceBelowWon: "5000.50" });
    expect(kept.body).toEqual({ isOrganization: false, balanceBelowWon: "5000.5" });
    expect((await call(harness.url, "GET", "/llm/alerts", token)).body).toMatchObject({
      balanceBelowWon: "5000.5",
    });
  });

  it("given a replayed (old timestamp) or tampered delivery, when verified with the documented verifier, then it fails", () => {
    const key = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const body = JSON.stringify({ type: "balance.low", timestamp: new Date().toISOString(), data: {} });
    const fresh = signedHeaders([key], "msg_1", new Date(), body);
    expect(() => new Webhook(key).verify(body, { ...fresh })).not.toThrow();
    expect(() => new Webhook(key).verify(body.replace("balance", "BALANCE"), { ...fresh })).toThrow();
    const old = signedHeaders([key], "msg_1", new Date(Date.now() - 10 * 60_000), body);
    expect(() => new Webhook(key).verify(body, { ...old })).toThrow();
  });

  it("given the receiver down, when alerts are sent and the worker restarts, then each arrives once per id after it comes up", async () => {
    const token = await harness.session("down-then-up");
    const added = await call(harness.url, "POST", "/llm/webhooks", token, {
      url: receiverUrl,
      events: ["balance.low"],
    });
    expect(added.status).toBe(201);
    expect(String(added.body.secret)).toMatch(/^whsec_/);
    secret = String(added.body.secret);
    const listed = await call(harness.url, "GET", "/llm/webhooks", token);
    expect(JSON.stringify(listed.body)).not.toContain(secret);
    const ids: string[] = [];
    for (let index = 0; index < 3; index++) {
      const test = await call(harness.url, "POST", `/llm/webhooks/${added.body.id}/test`, token);
      expect(test.status).toBe(202);
      ids.push(String(test.body.id));
    }
    receiver.setUp(false);
    let worker: RunningWebhookWorker = startWebhookWorker(harness.service.ledger.pool, logger, {
      ...fastRetries,
      allowPrivateNetworks: true,
    });
    const attempted = async () =>
      (await call(harness.url, "GET", `/llm/webhooks/${added.body.id}/deliveries`, token)).body.data as {
        attempts: number;
        status: string;
        nextAttemptAt: string | null;
      }[];
    await until(async () => (await attempted()).every((delivery) => delivery.attempts >= 2));
    await worker.close(); // a worker restart: the outbox is in PostgreSQL, nothing is in the worker
    receiver.setUp(true);
    worker = startWebhookWorker(harness.service.ledger.pool, logger, {
      ...fastRetries,
      allowPrivateNetworks: true,
    });
    await until(async () => (await attempted()).every((delivery) => delivery.status === "delivered"));
    await worker.close();
    expect(receiver.received.map((message) => message.id).sort()).toEqual([...ids].sort());
    expect(receiver.received[0]!.body).toMatchObject({ type: "webhook.test" });
  }, 20_000);

  it("given a threshold, when funds fall below, stay below and rise again, then balance.low is sent once per crossing", async () => {
    const userId = "low-funds-user";
    const token = await harness.session(userId);
    const added = await call(harness.url, "POST", "/llm/webhooks", token, {
      url: receiverUrl,
      events: ["balance.low"],
    });
    secret = String(added.body.secret);
    receiver.setUp(true);
    await harness.topUp({ kind: "user", id: userId }, "1000");
    const threshold = await call(harness.url, "PUT", "/llm/alerts", token, { balanceBelowWon: "5000" });
    expect(threshold.status).toBe(200);
    const pool = harness.service.ledger.pool;
    const lows = () =>
      receiver.received.filter(
        (message) => message.body.data.account && (message.body.data.account as { id: string }).id === userId,
      );
    await detectLowBalances(pool, new Date(), 1_000);
    await detectLowBalances(pool, new Date(), 1_000);
    const worker = startWebhookWorker(pool, logger, { ...fastRetries, allowPrivateNetworks: true });
    await until(() => lows().length === 1);
    await harness.topUp({ kind: "user", id: userId }, "10000");
    await detectLowBalances(pool, new Date(), 1_000);
    await call(harness.url, "PUT", "/llm/alerts", token, { balanceBelowWon: "20000" });
    await detectLowBalances(pool, new Date(), 1_000);
    await detectLowBalances(pool, new Date(), 1_000);
    await until(() => lows().length === 2);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await worker.close();
    expect(lows()).toHaveLength(2);
    expect(lows()[0]!.body).toMatchObject({
      type: "balance.low",
      data: {
        account: { kind: "user", id: userId },
        availableWon: expect.stringMatching(/^1000/),
        balanceBelowWon: "5000",
      },
    });
    const events = await pool.query(
      "SELECT type FROM ledger_events WHERE type IN ('AlertThresholdSet', 'WebhookEndpointAdded')",
    );
    expect(events.rowCount).toBeGreaterThanOrEqual(3);
  }, 20_000);

  it("given more accounts with a threshold than one pass checks, when passes run, then they rotate and reach an account past the first page", async () => {
    const pool = harness.service.ledger.pool;
    const first = "rotation-a-user";
    const last = "rotation-z-user";
    const firstToken = await harness.session(first);
    const lastToken = await harness.session(last);
    const added = await call(harness.url, "POST", "/llm/webhooks", lastToken, {
      url: receiverUrl,
      events: ["balance.low"],
    });
    secret = String(added.body.secret);
    receiver.setUp(true);
    await harness.topUp({ kind: "user", id: first }, "10000");
    await harness.topUp({ kind: "user", id: last }, "1000");
    for (const token of [firstToken, lastToken]) {
      expect((await call(harness.url, "PUT", "/llm/alerts", token, { balanceBelowWon: "5000" })).status).toBe(
        200,
      );
    }
    const thresholds = Number(
      (
        await pool.query<{ count: string }>(
          "SELECT count(*)::text AS count FROM projection_alert_thresholds WHERE balance_below_won IS NOT NULL",
        )
      ).rows[0]!.count,
    );
    // One account per pass: the first pass checks the first account in order, never rotation-z-user.
    expect((await detectLowBalances(pool, new Date(), 1)).next).not.toBeNull();
    const lows = () =>
      receiver.received.filter(
        (message) =>
          message.body.type === "balance.low" && (message.body.data.account as { id: string }).id === last,
      );
    const worker = startWebhookWorker(pool, logger, {
      ...fastRetries,
      allowPrivateNetworks: true,
      balanceCheckIntervalMs: 3_600_000,
      balanceCheckAccountsMax: 1,
    });
    let alerted = 0;
    for (let pass = 0; pass < thresholds; pass++) alerted += await worker.checkBalances();
    expect(alerted).toBeGreaterThanOrEqual(1);
    await until(() => lows().length === 1);
    for (let pass = 0; pass < thresholds + 1; pass++) await worker.checkBalances();
    await new Promise((resolve) => setTimeout(resolve, 300));
    await worker.close();
    expect(lows()).toHaveLength(1);
  }, 20_000);

  it("given a key with a rate limit of 1 per minute, when it is refused twice, then its account's subscribed endpoint gets key.limit_reached once", async () => {
    const userId = "limited-key-user";
    const token = await harness.session(userId);
    const other = await harness.session("limited-key-other");
    const otherAdded = await call(harness.url, "POST", "/llm/webhooks", other, {
      url: receiverUrl,
      events: ["key.limit_reached"],
    });
    expect(otherAdded.status).toBe(201);
    const lowOnly = await call(harness.url, "POST", "/llm/webhooks", token, {
      url: receiverUrl,
      events: ["balance.low"],
    });
    const added = await call(harness.url, "POST", "/llm/webhooks", token, {
      url: receiverUrl,
      events: ["key.limit_reached"],
    });
    secret = String(added.body.secret);
    receiver.setUp(true);
    await harness.topUp({ kind: "user", id: userId }, "1000");
    const key = await harness.issueKey(token, { name: "rated" });
    const limited = await call(harness.url, "PUT", `/llm/apis/${key.uuid}/limits`, token, {
      rateLimitRequestsPerMinute: 1,
    });
    expect(limited.status).toBe(200);
    // Keep the three requests in one minute (one window).
    const second = new Date().getUTCSeconds();
    if (second > 50) await new Promise((resolve) => setTimeout(resolve, (61 - second) * 1_000));
    const chat = () => chatStatusWith(harness.baseUrl, key.key);
    expect([await chat(), await chat()]).toEqual([200, 429]);
    // Durable before the refusal was answered: a gateway killed now would still leave the alert to send.
    const outboxed = await harness.service.ledger.pool.query(
      "SELECT 1 FROM webhook_deliveries WHERE event_type = 'key.limit_reached'",
    );
    expect(outboxed.rowCount).toBe(1);
    expect(await chat()).toBe(429);
    const worker = startWebhookWorker(harness.service.ledger.pool, logger, {
      ...fastRetries,
      allowPrivateNetworks: true,
    });
    const reached = () => receiver.received.filter((message) => message.body.type === "key.limit_reached");
    await until(() => reached().length === 1);
    await new Promise((resolve) => setTimeout(resolve, 1_500)); // another delivery pass
    await worker.close();
    expect(reached()).toHaveLength(1);
    expect(reached()[0]!.body.data).toMatchObject({
      account: { kind: "user", id: userId },
      keyId: key.uuid,
      keyName: "rated",
      limit: "rate",
      limitValue: "1",
      resetsAt: expect.stringMatching(/:00\.000Z$/),
    });
    const written = await harness.service.ledger.pool.query<{ webhook_id: string }>(
      "SELECT webhook_id FROM webhook_deliveries WHERE event_type = 'key.limit_reached'",
    );
    expect(written.rows.map((row) => row.webhook_id)).toEqual([added.body.id]);
    expect(lowOnly.status).toBe(201);
  }, 30_000);

  it("given a key alerted at its total spend limit, when the limit is raised and reached again, then key.limit_reached is written again naming the new limit", async () => {
    const userId = "raised-limit-user";
    const token = await harness.session(userId);
    const added = await call(harness.url, "POST", "/llm/webhooks", token, {
      url: receiverUrl,
      events: ["key.limit_reached"],
    });
    expect(added.status).toBe(201);
    await harness.topUp({ kind: "user", id: userId }, "1000");
    const key = await harness.issueKey(token, { name: "capped" });
    const chat = () => chatStatusWith(harness.baseUrl, key.key);
    const alerted = async () =>
      (
        await harness.service.ledger.pool.query<{ limit_value: string }>(
          `SELECT body::json->'data'->>'limitValue' AS limit_value FROM webhook_deliveries
           WHERE event_type = 'key.limit_reached' AND body::json->'data'->>'keyId' = $1
           ORDER BY created_at`,
          [key.uuid],
        )
      ).rows.map((row) => row.limit_value);
    const limitTo = (totalSpendLimitWon: string) =>
      call(harness.url, "PUT", `/llm/apis/${key.uuid}/limits`, token, { totalSpendLimitWon });

    expect((await limitTo("0.01")).status).toBe(200);
    // The first request is under the limit; its cost takes the key past it.
    expect([await chat(), await chat()]).toEqual([200, 400]);
    expect(await alerted()).toEqual(["0.01"]);

    expect((await limitTo("0.02")).status).toBe(200);
    expect(await chat()).toBe(400);
    expect(await alerted()).toEqual(["0.01", "0.02"]);
    expect(await chat()).toBe(400);
    expect(await alerted()).toEqual(["0.01", "0.02"]);
    // Its messages, signed with a secret the receiver does not hold, are no other test's to deliver.
    expect((await call(harness.url, "DELETE", `/llm/webhooks/${added.body.id}`, token)).status).toBe(200);
  }, 30_000);

  it("given a month's statement, when it becomes final, then each subscribed endpoint of the account gets statement.closed once", async () => {
    const userId = "statement-user";
    const token = await harness.session(userId);
    const added = await call(harness.url, "POST", "/llm/webhooks", token, {
      url: receiverUrl,
      events: ["statement.closed"],
    });
    secret = String(added.body.secret);
    receiver.setUp(true);
    await harness.topUp({ kind: "user", id: userId }, "1000");
    // Another account whose usage of the month is recorded but not charged (this harness charges nothing):
    // its statement stays provisional, so it is not told.
    const unsettledToken = await harness.session("statement-unsettled-user");
    const unsettledAdded = await call(harness.url, "POST", "/llm/webhooks", unsettledToken, {
      url: receiverUrl,
      events: ["statement.closed"],
    });
    await harness.topUp({ kind: "user", id: "statement-unsettled-user" }, "1000");
    const unsettledKey = await harness.issueKey(unsettledToken);
    const served = await fetch(`${harness.baseUrl}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${unsettledKey.key}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "alpha-5.4",
        max_tokens: 20,
        messages: [{ role: "user", content: "hi" }],
      }),
    });
    expect(served.status).toBe(200);
    const pool = harness.service.ledger.pool;
    await until(async () => {
      const pending = await pool.query(
        `SELECT 1 FROM ${pendingChargesTable.name} WHERE account_id = 'statement-unsettled-user'`,
      );
      return (pending.rowCount ?? 0) > 0;
    });
    const month = statementMonthOf(new Date());
    const { end } = boundsOf(month);
    const graceOver = end.getTime() + statementLimits.settlementGraceMs;
    // Provisional: the month, or its settlement grace, is not over yet.
    expect(await detectClosedStatements(pool, new Date())).toBe(0);
    expect(await detectClosedStatements(pool, new Date(graceOver - 1_000))).toBe(0);
    // A request of the month still running on its hold row (nothing of it in the log yet): not final.
    const [running] = await usageAuthorizationsOf(pool, harness.service.ledger.store).authorizeUsage([
      personalHoldRequest("statement-running", userId),
    ]);
    expect(running).toMatchObject({ kind: "held" });
    expect(await detectClosedStatements(pool, new Date(graceOver + 30_000))).toBe(0);
    await pool.query("DELETE FROM request_holds WHERE request_id = 'statement-running'");
    // A hold of the month swept while its gateway lived, its correction still possible: not final either,
    // as the statement itself says.
    await pool.query(
      `INSERT INTO swept_hold_reserves
         (request_id, account_kind, account_id, key_id, month, gateway_instance, reserved_won, reserved_until)
       VALUES ('statement-swept', 'user', $1, gen_random_uuid(), $2, 'gateway-a', 10, now() + interval '1 hour')`,
      [userId, month],
    );
    expect(await detectClosedStatements(pool, new Date(graceOver + 45_000))).toBe(0);
    await pool.query("DELETE FROM swept_hold_reserves WHERE request_id = 'statement-swept'");
    expect(await detectClosedStatements(pool, new Date(graceOver + 60_000))).toBe(1);
    expect(await detectClosedStatements(pool, new Date(graceOver + 120_000))).toBe(0);
    const told = await pool.query(
      "SELECT 1 FROM webhook_deliveries WHERE event_type = 'statement.closed' AND webhook_id = $1",
      [unsettledAdded.body.id],
    );
    expect(told.rowCount).toBe(0);
    const worker = startWebhookWorker(pool, logger, { ...fastRetries, allowPrivateNetworks: true });
    const closed = () => receiver.received.filter((message) => message.body.type === "statement.closed");
    await until(() => closed().length === 1);
    await worker.close();
    expect(closed()[0]!.body.data).toEqual({
      account: { kind: "user", id: userId },
      month,
      from: boundsOf(month).start.toISOString(),
      to: end.toISOString(),
    });
  }, 20_000);

  it("given an organization, when a member manages its webhooks, then 403/160; an owner may", async () => {
    const owner = await harness.session("org-owner", "org-webhooks");
    const member = await harness.session("org-member", "org-webhooks");
    expect(
      (await call(harness.url, "PUT", "/llm/alerts", owner, { isOrganization: true, balanceBelowWon: "1" }))
        .status,
    ).toBe(200);
    const refused = await call(harness.url, "POST", "/llm/webhooks", member, {
      url: receiverUrl,
      events: ["statement.closed"],
      isOrganization: true,
    });
    expect(refused.status).toBe(403);
    expect(refused.body).toMatchObject({ status: 160 });
  });
});
