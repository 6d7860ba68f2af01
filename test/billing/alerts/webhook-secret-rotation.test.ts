import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import pino from "pino";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AlertService } from "../../../src/billing/alerts/alert-service";
import { forgetRetiredSecrets } from "../../../src/billing/alerts/webhook-outbox";
import { type RunningWebhookWorker, startWebhookWorker } from "../../../workers/deliver-webhooks";
import { type GatewayHarness, startGatewayHarness } from "../../support/gateway-harness";
import { callJson } from "../../support/json-call";

/**
 * Rotating a webhook endpoint's signing secret (`POST /llm/webhooks/{id}/secret`) through the real gateway,
 * PostgreSQL, the webhook worker and a receiver on 127.0.0.1 that keeps every attempt as sent. Each attempt
 * is verified here with the Standard Webhooks library, under the new secret and under the old one: for 24 h
 * after a rotation both verify, then only the new. The 24 h are the service's clock, injected: a rotation
 * made 25 h ago is one by an alert service whose clock is 25 h behind.
 */

interface Attempt {
  id: string;
  body: string;
  headers: Record<string, string>;
}

const hourMs = 3_600_000;
const logger = pino({ level: "silent" });

/** Answers every attempt with the status it is set to, keeping each one. */
function startReceiver() {
  const attempts: Attempt[] = [];
  let answerStatus = 204;
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      attempts.push({
        id: String(request.headers["webhook-id"]),
        body: Buffer.concat(chunks).toString("utf8"),
        headers: request.headers as Record<string, string>,
      });
      response.writeHead(answerStatus).end();
    });
  });
  return {
    attempts,
    answerWith: (status: number) => {
      answerStatus = status;
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

function verifiesUnder(secret: string, attempt: Attempt): boolean {
  try {
    new Webhook(secret).verify(attempt.body, attempt.headers);
    return true;
  } catch {
    return false;
  }
}

/** The signatures of an attempt, in the order sent. */
function signaturesOf(attempt: Attempt): string[] {
  return attempt.headers["webhook-signature"]!.split(" ");
}

async function until(what: string, condition: () => boolean | Promise<boolean>, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe("rotating a webhook's signing secret", () => {
  let harness: GatewayHarness;
  let worker: RunningWebhookWorker;
  const receiver = startReceiver();
  let receiverUrl = "";
  const call = (method: string, path: string, token: string, body?: unknown) =>
    callJson(harness.url, method, path, token, body);

  beforeAll(async () => {
    receiverUrl = await receiver.listen();
    harness = await startGatewayHarness({
      label: "webhook_rotation",
      service: { webhookAllowPrivateNetworks: true },
    });
    worker = startWebhookWorker(harness.service.ledger.pool, logger, {
      pollIntervalMs: 50,
      retryDelaysMs: [50, 100, 200],
      retryWindowMs: 60_000,
      allowPrivateNetworks: true,
    });
  }, 120_000);

  afterAll(async () => {
    await worker?.close();
    await receiver.close();
    await harness?.close();
  });

  /** An endpoint of the user, at the receiver: its id and its first secret. */
  async function endpointOf(token: string, body: Record<string, unknown> = {}) {
    const added = await call("POST", "/llm/webhooks", token, {
      url: receiverUrl,
      events: ["balance.low"],
      ...body,
    });
    expect(added.status).toBe(201);
    return { id: String(added.body.id), secret: String(added.body.secret) };
  }

  /** A test message's attempts, once one of them was answered 2xx. */
  async function deliveredTest(token: string, webhookId: string): Promise<Attempt[]> {
    const sent = await call("POST", `/llm/webhooks/${webhookId}/test`, token);
    expect(sent.status).toBe(202);
    const messageId = String(sent.body.id);
    await until("the test message is delivered", async () => {
      const log = await call("GET", `/llm/webhooks/${webhookId}/deliveries`, token);
      return (log.body.data as { id: string; status: string }[]).some(
        (delivery) => delivery.id === messageId && delivery.status === "delivered",
      );
    });
    return receiver.attempts.filter((attempt) => attempt.id === messageId);
  }

  it("given an endpoint, when its secret is rotated, then the answer is a new secret shown once, and the rotation is an event on its stream without it", async () => {
    const token = await harness.session("rotation-answer-user");
    const endpoint = await endpointOf(token);

    const rotated = await call("POST", `/llm/webhooks/${endpoint.id}/secret`, token);

    expect(rotated.status).toBe(200);
    expect(rotated.body).toEqual({ id: endpoint.id, secret: expect.stringMatching(/^whsec_/) });
    expect(rotated.body.secret).not.toBe(endpoint.secret);
    const listed = JSON.stringify((await call("GET", "/llm/webhooks", token)).body);
    expect(listed).toContain(endpoint.id);
    expect(listed).not.toContain(endpoint.secret);
    expect(listed).not.toContain(String(rotated.body.secret));
    const events = await harness.service.ledger.pool.query<{ type: string; data: unknown; actor: string }>(
      `SELECT type, data, metadata->>'actor' AS actor FROM ledger_events WHERE stream_id = $1
       ORDER BY stream_version`,
      [`webhook-${endpoint.id}`],
    );
    expect(events.rows.map((row) => row.type)).toEqual(["WebhookEndpointAdded", "WebhookSecretRotated"]);
    expect(events.rows[1]).toMatchObject({
      data: { webhookId: endpoint.id, account: { kind: "user", id: "rotation-answer-user" } },
      actor: "user:rotation-answer-user",
    });
    expect(JSON.stringify(events.rows)).not.toContain("whsec_");
  });

  it("given a rotation, when a message is delivered within 24 h, then it verifies under the new secret and under the old one, the new one signed first", async () => {
    const token = await harness.session("rotation-both-user");
    const endpoint = await endpointOf(token);
    const rotated = await call("POST", `/llm/webhooks/${endpoint.id}/secret`, token);
    const newSecret = String(rotated.body.secret);

    const [attempt] = await deliveredTest(token, endpoint.id);

    expect(verifiesUnder(newSecret, attempt!)).toBe(true);
    expect(verifiesUnder(endpoint.secret, attempt!)).toBe(true);
    const [first, second, ...more] = signaturesOf(attempt!);
    expect(more).toEqual([]);
    expect(
      verifiesUnder(newSecret, {
        ...attempt!,
        headers: { ...attempt!.headers, "webhook-signature": first! },
      }),
    ).toBe(true);
    expect(
      verifiesUnder(endpoint.secret, {
        ...attempt!,
        headers: { ...attempt!.headers, "webhook-signature": second! },
      }),
    ).toBe(true);
  });

  it("given a rotation 25 h ago, when a message is delivered, then it verifies under the new secret only, and the old one is forgotten", async () => {
    const userId = "rotation-expired-user";
    const token = await harness.session(userId);
    const endpoint = await endpointOf(token);
    const rotatedEarlier = new AlertService({
      pool: harness.service.ledger.pool,
      store: harness.service.ledger.store,
      waiter: harness.service.waiter,
      projectionWaitTimeoutMs: 10_000,
      allowPrivateNetworks: true,
      now: () => new Date(Date.now() - 25 * hourMs),
    });
    const rotated = await rotatedEarlier.rotateWebhookSecret(
      endpoint.id,
      { kind: "user", id: userId },
      `user:${userId}`,
      "rotation-expired",
    );

    const [attempt] = await deliveredTest(token, endpoint.id);

    expect(verifiesUnder(rotated.secret, attempt!)).toBe(true);
    expect(verifiesUnder(endpoint.secret, attempt!)).toBe(false);
    expect(signaturesOf(attempt!)).toHaveLength(1);
    expect(await forgetRetiredSecrets(harness.service.ledger.pool)).toBeGreaterThanOrEqual(1);
    const kept = await harness.service.ledger.pool.query(
      "SELECT 1 FROM webhook_secrets WHERE webhook_id = $1 AND previous_secret IS NOT NULL",
      [endpoint.id],
    );
    expect(kept.rowCount).toBe(0);
  });

  it("given a second rotation within 24 h, then a delivery is signed with the newest secret and the one it replaced, not the first", async () => {
    const token = await harness.session("rotation-twice-user");
    const endpoint = await endpointOf(token);
    const second = await call("POST", `/llm/webhooks/${endpoint.id}/secret`, token);
    const third = await call("POST", `/llm/webhooks/${endpoint.id}/secret`, token);

    const [attempt] = await deliveredTest(token, endpoint.id);

    expect(signaturesOf(attempt!)).toHaveLength(2);
    expect(verifiesUnder(String(third.body.secret), attempt!)).toBe(true);
    expect(verifiesUnder(String(second.body.secret), attempt!)).toBe(true);
    expect(verifiesUnder(endpoint.secret, attempt!)).toBe(false);
  });

  it("given a message being retried, when the secret is rotated, then its next attempt is signed with the new secret and the old one", async () => {
    const token = await harness.session("rotation-retried-user");
    const endpoint = await endpointOf(token);
    receiver.answerWith(503);
    try {
      const sent = await call("POST", `/llm/webhooks/${endpoint.id}/test`, token);
      const messageId = String(sent.body.id);
      const attemptsOf = () => receiver.attempts.filter((attempt) => attempt.id === messageId);
      await until("the message failed once", () => attemptsOf().length >= 1);
      const rotated = await call("POST", `/llm/webhooks/${endpoint.id}/secret`, token);
      expect(rotated.status).toBe(200);
      const newSecret = String(rotated.body.secret);
      const signedBoth = () => attemptsOf().filter((attempt) => signaturesOf(attempt).length === 2);
      await until("an attempt after the rotation", () => signedBoth().length >= 1);
      receiver.answerWith(204);
      await until("the message is delivered", async () => {
        const log = await call("GET", `/llm/webhooks/${endpoint.id}/deliveries`, token);
        return (log.body.data as { id: string; status: string }[]).some(
          (delivery) => delivery.id === messageId && delivery.status === "delivered",
        );
      });

      const [before] = attemptsOf();
      expect(verifiesUnder(endpoint.secret, before!)).toBe(true);
      expect(verifiesUnder(newSecret, before!)).toBe(false);
      const last = attemptsOf().at(-1)!;
      expect(last.id).toBe(messageId);
      expect(verifiesUnder(newSecret, last)).toBe(true);
      expect(verifiesUnder(endpoint.secret, last)).toBe(true);
    } finally {
      receiver.answerWith(204);
    }
  });

  it("given two processes rotating one endpoint at once, when the earlier rotation's secret is written last, then the later rotation in the log is in force and each answer verifies", async () => {
    const userId = "rotation-race-user";
    const token = await harness.session(userId);
    const endpoint = await endpointOf(token);
    const pool = harness.service.ledger.pool;
    // The first process's secret write waits until the second process has rotated and answered.
    let release = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let held = false;
    const slowPool = new Proxy(pool, {
      get(target, property, receiver) {
        if (property !== "query") return Reflect.get(target, property, receiver);
        return async (...args: Parameters<typeof pool.query>) => {
          if (!held && String(args[0]).includes("UPDATE webhook_secrets")) {
            held = true;
            await released;
          }
          return (target.query as (...queryArgs: unknown[]) => unknown)(...args);
        };
      },
    });
    const processOf = (database: typeof pool) =>
      new AlertService({
        pool: database,
        store: harness.service.ledger.store,
        waiter: harness.service.waiter,
        projectionWaitTimeoutMs: 10_000,
        allowPrivateNetworks: true,
      });
    const rotate = (process: AlertService) =>
      process.rotateWebhookSecret(endpoint.id, { kind: "user", id: userId }, `user:${userId}`, "race");

    const slow = rotate(processOf(slowPool));
    await until("the first rotation is appended", () => held);
    const fast = await rotate(processOf(pool));
    release();
    const late = await slow;

    const events = await pool.query<{ type: string }>(
      "SELECT type FROM ledger_events WHERE stream_id = $1 ORDER BY stream_version",
      [`webhook-${endpoint.id}`],
    );
    // Its secret never in force, the first rotation was made again after the second.
    expect(events.rows.map((row) => row.type)).toEqual([
      "WebhookEndpointAdded",
      "WebhookSecretRotated",
      "WebhookSecretRotated",
      "WebhookSecretRotated",
    ]);
    const [attempt] = await deliveredTest(token, endpoint.id);
    const [first] = signaturesOf(attempt!);
    expect(
      verifiesUnder(late.secret, {
        ...attempt!,
        headers: { ...attempt!.headers, "webhook-signature": first! },
      }),
    ).toBe(true);
    expect(verifiesUnder(fast.secret, attempt!)).toBe(true);
    expect(verifiesUnder(endpoint.secret, attempt!)).toBe(false);
  });

  it("given an unknown id, another user's endpoint or a removed one, when rotated, then 404/120 and nothing is recorded", async () => {
    const owner = await harness.session("rotation-owner-user");
    const stranger = await harness.session("rotation-stranger-user");
    const endpoint = await endpointOf(owner);
    const removed = await endpointOf(owner);
    expect((await call("DELETE", `/llm/webhooks/${removed.id}`, owner)).status).toBe(200);

    for (const [token, webhookId] of [
      [owner, "wh_unknown"],
      [stranger, endpoint.id],
      [owner, removed.id],
    ] as const) {
      const refused = await call("POST", `/llm/webhooks/${webhookId}/secret`, token);
      expect(refused, webhookId).toMatchObject({ status: 404, body: { status: 120 } });
    }
    const rotations = await harness.service.ledger.pool.query(
      "SELECT 1 FROM ledger_events WHERE type = 'WebhookSecretRotated' AND stream_id = ANY($1)",
      [[`webhook-${endpoint.id}`, `webhook-${removed.id}`]],
    );
    expect(rotations.rowCount).toBe(0);
    const [attempt] = await deliveredTest(owner, endpoint.id);
    expect(signaturesOf(attempt!)).toHaveLength(1);
    expect(verifiesUnder(endpoint.secret, attempt!)).toBe(true);
  });

  it("given an organization's endpoint, when a member rotates its secret, then 403/160 and its secret stays; an admin may", async () => {
    const organizationId = "org-rotation";
    const owner = await harness.session("rotation-org-owner", organizationId);
    const endpoint = await endpointOf(owner, { isOrganization: true });
    const member = await harness.session("rotation-org-member", organizationId);
    const adminToken = await harness.session("rotation-org-admin", organizationId);
    expect(
      (await call("PUT", "/llm/organization/members/rotation-org-admin", owner, { role: "admin" })).status,
    ).toBe(200);

    const refused = await call("POST", `/llm/webhooks/${endpoint.id}/secret`, member);

    expect(refused).toMatchObject({ status: 403, body: { status: 160 } });
    const [attempt] = await deliveredTest(owner, endpoint.id);
    expect(signaturesOf(attempt!)).toHaveLength(1);
    expect(verifiesUnder(endpoint.secret, attempt!)).toBe(true);
    const rotated = await call("POST", `/llm/webhooks/${endpoint.id}/secret`, adminToken);
    expect(rotated).toMatchObject({
      status: 200,
      body: { id: endpoint.id, secret: expect.stringMatching(/^whsec_/) },
    });
  });
});
