import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import pg from "pg";
import { Webhook } from "standardwebhooks";
import { afterEach, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "./support/database";
import { callJson } from "./support/json-call";
import { gatewayOriginOf, killOutright, type ServiceProcess, spawnRole } from "./support/service-process";
import { removeDeploymentQueueData } from "./workers/queue-test-support";

/**
 * Webhook alerts across processes killed outright (SIGKILL), as deployed for scale-out: a key refused for its
 * rate limit by a gateway killed right after answering the 429, and test messages a worker failed to deliver
 * (the receiver down) before it was killed, all reach the receiver once it is up, through another worker —
 * each once per webhook-id, each signature verified. Real schedule: the first retry is 5 s after a failure.
 */

const adminToken = "hook-admin-token-0123456789abcdef0123456789ab";
const started: ServiceProcess[] = [];
let database: TestDatabase | undefined;
let receiver: Server | undefined;

function environmentOf(database: TestDatabase): NodeJS.ProcessEnv {
  return {
    ...process.env,
    DATABASE_URL: database.url,
    SESSION_SECRET: "hook-session-secret-0123456789abcdef0123456789",
    KEY_PEPPER: "hook-key-pepper-0123456789abcdef0123456789abcd",
    ADMIN_TOKEN: adminToken,
    PORT: "0",
    HOST: "127.0.0.1",
    LOG_LEVEL: "info",
    WEBHOOK_ALLOW_PRIVATE_NETWORKS: "true",
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

/** A receiver answering 503 until `up`, then verifying each message's signature and keeping it. */
async function startReceiver(secret: () => string) {
  const received: { id: string; type: string }[] = [];
  let up = false;
  let refused = 0;
  receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      if (!up) {
        refused++;
        return void response.writeHead(503).end();
      }
      const body = Buffer.concat(chunks).toString("utf8");
      new Webhook(secret()).verify(body, request.headers as Record<string, string>);
      received.push({
        id: String(request.headers["webhook-id"]),
        type: (JSON.parse(body) as { type: string }).type,
      });
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => receiver!.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`,
    received,
    refused: () => refused,
    setUp: () => {
      up = true;
    },
  };
}

async function until(condition: () => boolean | Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadlineMs = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadlineMs) throw new Error("the condition did not hold in time");
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

afterEach(async () => {
  for (const running of started.splice(0)) if (running.child.exitCode === null) running.child.kill("SIGKILL");
  await new Promise<void>((resolve) => (receiver ? receiver.close(() => resolve()) : resolve()));
  receiver = undefined;
  if (database)
    await removeDeploymentQueueData({ redisUrl: process.env.REDIS_URL, databaseUrl: database.url });
  await database?.drop();
  database = undefined;
});

describe("webhook alerts across processes killed outright", () => {
  it("delivers each alert once per webhook-id after the gateway and the worker were SIGKILLed with the receiver down", async () => {
    database = await createTestDatabase("webhook_crash");
    const environment = environmentOf(database);
    // A gateway waits for a worker to prepare the projections: both start at once.
    const [gateway, firstWorker] = await Promise.all([
      startRole("gateway", environment),
      startRole("worker", environment),
    ]);
    const origin = gatewayOriginOf(gateway);
    let secret = "";
    const hooks = await startReceiver(() => secret);

    const admin = { authorization: `Bearer ${adminToken}`, "content-type": "application/json" };
    const minted = await fetch(`${origin}/admin/sessions`, {
      method: "POST",
      headers: admin,
      body: JSON.stringify({ userId: "hooked" }),
    });
    const session = ((await minted.json()) as { token: string }).token;
    await fetch(`${origin}/admin/accounts/user/hooked/credits`, {
      method: "POST",
      headers: admin,
      body: JSON.stringify({ amountWon: "10000", reference: "test" }),
    });
    const added = await callJson(origin, "POST", "/llm/webhooks", session, {
      url: hooks.url,
      events: ["key.limit_reached"],
    });
    expect(added.status).toBe(201);
    secret = added.body.secret as string;
    const webhookId = added.body.id as string;
    const key = await callJson(origin, "POST", "/llm/apis", session, { name: "rated" });
    const keyValue = key.body.key as string;
    expect(
      (
        await callJson(origin, "PUT", `/llm/apis/${key.body.uuid as string}/limits`, session, {
          rateLimitRequestsPerMinute: 1,
        })
      ).status,
    ).toBe(200);

    // Test messages the worker tries while the receiver is down.
    const testIds: string[] = [];
    for (let index = 0; index < 3; index++)
      testIds.push(
        (await callJson(origin, "POST", `/llm/webhooks/${webhookId}/test`, session)).body.id as string,
      );
    await until(() => hooks.refused() >= 3, 20_000);
    // No attempt in flight when the worker dies: each row waits for its retry (5 s after the failure).
    const pool = new pg.Pool({ connectionString: database.url, max: 1 });
    try {
      await until(async () => {
        const { rows } = await pool.query<{ leased: number }>(
          "SELECT count(*)::int AS leased FROM webhook_deliveries WHERE leased_until > now()",
        );
        return rows[0]!.leased === 0;
      }, 20_000);
    } finally {
      await pool.end();
    }
    await killOutright(firstWorker);

    // A key refused for its rate limit, its gateway killed as soon as the 429 is answered.
    const chat = async () =>
      (
        await fetch(`${origin}/llm/v1/chat/completions`, {
          method: "POST",
          headers: { authorization: `Bearer ${keyValue}`, "content-type": "application/json" },
          body: JSON.stringify({
            model: "alpha-5.4",
            max_tokens: 8,
            messages: [{ role: "user", content: "hi" }],
          }),
        })
      ).status;
    const second = new Date().getUTCSeconds();
    if (second > 50) await new Promise((resolve) => setTimeout(resolve, (61 - second) * 1_000));
    expect(await chat()).toBe(200);
    expect(await chat()).toBe(429);
    await killOutright(gateway);

    hooks.setUp();
    await startRole("worker", environment);
    await until(() => hooks.received.length >= 4, 30_000);
    // A little longer: nothing is delivered twice.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    const ids = hooks.received.map((message) => message.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(
      hooks.received
        .filter((message) => message.type === "webhook.test")
        .map((message) => message.id)
        .sort(),
    ).toEqual([...testIds].sort());
    expect(hooks.received.filter((message) => message.type === "key.limit_reached")).toHaveLength(1);
  }, 120_000);
});
