import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { webhookLimits } from "../../../src/kernel/limits";
import { type RunningWebhookWorker, startWebhookWorker } from "../../../workers/deliver-webhooks";
import { type GatewayHarness, startGatewayHarness } from "../../support/gateway-harness";
import { callJson as call } from "../../support/json-call";

/**
 * Fair delivery (C14): the outbox is shared by every account, and an account whose receivers never answer
 * must not hold up the others' messages. Given accounts with many endpoints at a receiver that never answers,
 * another account's message (or the same account's healthy endpoint's) is sent within about one attempt's
 * deadline, not after all the hanging attempts; each hanging message is still attempted, once, never twice at
 * once, and no account has more than its share of attempts in flight across the workers. Real gateway,
 * PostgreSQL, workers and receivers on 127.0.0.1.
 */

const logger = pino({ level: "silent" });
const attemptTimeoutMs = 1_000;
const perAccountMax = webhookLimits.deliveryAttemptsInFlightPerAccountMax;

/**
 * Reads each POST and never answers, keeping per `webhook-id` how often it came and how many of its requests
 * were open at once, and per account (the path's first segment) the most requests open at once.
 */
function startHangingReceiver() {
  const attemptsById = new Map<string, number>();
  const openById = new Map<string, number>();
  const openByAccount = new Map<string, number>();
  const mostOpenByAccount = new Map<string, number>();
  let mostOpenForOneId = 0;
  const server: Server = createServer((request, response) => {
    const id = String(request.headers["webhook-id"]);
    const account = String(request.url).split("/")[2]!;
    attemptsById.set(id, (attemptsById.get(id) ?? 0) + 1);
    openById.set(id, (openById.get(id) ?? 0) + 1);
    openByAccount.set(account, (openByAccount.get(account) ?? 0) + 1);
    mostOpenForOneId = Math.max(mostOpenForOneId, openById.get(id)!);
    mostOpenByAccount.set(
      account,
      Math.max(mostOpenByAccount.get(account) ?? 0, openByAccount.get(account)!),
    );
    request.resume();
    response.on("close", () => {
      openById.set(id, openById.get(id)! - 1);
      openByAccount.set(account, openByAccount.get(account)! - 1);
    });
  });
  return {
    server,
    attemptsById,
    mostOpenByAccount,
    mostOpenForOneId: () => mostOpenForOneId,
    open: () => [...openById.values()].reduce((sum, open) => sum + open, 0),
  };
}

/** Answers every POST at once with 204, keeping when each id came. */
function startHealthyReceiver() {
  const receivedAtMs = new Map<string, number>();
  const server: Server = createServer((request, response) => {
    request.resume();
    request.on("end", () => {
      receivedAtMs.set(String(request.headers["webhook-id"]), Date.now());
      response.writeHead(204).end();
    });
  });
  return { server, receivedAtMs };
}

async function listen(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

async function until(what: string, condition: () => boolean | Promise<boolean>, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

let harness: GatewayHarness;
const hanging = startHangingReceiver();
const healthy = startHealthyReceiver();
let hangingUrl = "";
let healthyUrl = "";

beforeAll(async () => {
  hangingUrl = await listen(hanging.server);
  healthyUrl = await listen(healthy.server);
  harness = await startGatewayHarness({
    label: "webhook_fairness",
    service: { webhookAllowPrivateNetworks: true },
  });
}, 120_000);

afterAll(async () => {
  hanging.server.closeAllConnections();
  await new Promise((resolve) => hanging.server.close(resolve));
  healthy.server.closeAllConnections();
  await new Promise((resolve) => healthy.server.close(resolve));
  await harness?.close();
});

async function addWebhook(token: string, url: string): Promise<string> {
  const added = await call(harness.url, "POST", "/llm/webhooks", token, {
    url,
    events: ["statement.closed"],
  });
  expect(added.status).toBe(201);
  return String(added.body.id);
}

async function sendTest(token: string, webhookId: string): Promise<string> {
  const sent = await call(harness.url, "POST", `/llm/webhooks/${webhookId}/test`, token);
  expect(sent.status).toBe(202);
  return String(sent.body.id);
}

/** An account (user `owner`) with `endpoints` endpoints at the hanging receiver, `messages` test messages each. */
/** A test message sent to a healthy receiver, and when it was sent. */
async function sendTestTimed(token: string, webhookId: string) {
  const sentAtMs = Date.now();
  return { deliveryId: await sendTest(token, webhookId), sentAtMs };
}

/** The healthy receiver got the message within `withinMs` of its sending (waiting up to `waitMs` for it). */
async function expectReceivedWithin(
  sent: { deliveryId: string; sentAtMs: number },
  withinMs: number,
  waitMs: number,
) {
  await until(
    "the healthy receiver got its message",
    () => healthy.receivedAtMs.has(sent.deliveryId),
    waitMs,
  );
  expect(healthy.receivedAtMs.get(sent.deliveryId)! - sent.sentAtMs).toBeLessThan(withinMs);
}

async function hangingAccount(owner: string, endpoints: number, messages: number) {
  const token = await harness.session(owner);
  const deliveryIds: string[] = [];
  for (let endpoint = 0; endpoint < endpoints; endpoint++) {
    const webhookId = await addWebhook(token, `${hangingUrl}/hook/${owner}/${endpoint}`);
    for (let message = 0; message < messages; message++) deliveryIds.push(await sendTest(token, webhookId));
  }
  return { token, deliveryIds };
}

async function attemptsRecorded(deliveryIds: string[]): Promise<number[]> {
  const result = await harness.service.ledger.pool.query<{ attempts: number }>(
    "SELECT attempts FROM webhook_deliveries WHERE delivery_id = ANY($1)",
    [deliveryIds],
  );
  return result.rows.map((row) => row.attempts);
}

function startWorker(timeoutMs = attemptTimeoutMs): RunningWebhookWorker {
  return startWebhookWorker(harness.service.ledger.pool, logger, {
    pollIntervalMs: 50,
    balanceCheckIntervalMs: 60_000,
    retryDelaysMs: [120_000],
    attemptTimeoutMs: timeoutMs,
    allowPrivateNetworks: true,
  });
}

/** Every hanging message attempted once (the receiver saw it once, its row counts one), never twice at once. */
async function expectEachAttemptedOnce(deliveryIds: string[], timeoutMs = attemptTimeoutMs) {
  const budgetMs = (deliveryIds.length / perAccountMax + 2) * timeoutMs + 2_000;
  await until(
    "every hanging message attempted",
    async () => (await attemptsRecorded(deliveryIds)).every((attempts) => attempts === 1),
    budgetMs,
  );
  for (const deliveryId of deliveryIds) expect(hanging.attemptsById.get(deliveryId), deliveryId).toBe(1);
  expect(hanging.mostOpenForOneId()).toBe(1);
}

async function cancelPending(deliveryIds: string[]) {
  await harness.service.ledger.pool.query(
    "UPDATE webhook_deliveries SET status = 'cancelled' WHERE delivery_id = ANY($1) AND status = 'pending'",
    [deliveryIds],
  );
}

describe("fair webhook delivery", () => {
  it("given one account's 40 messages at a receiver that never answers, then another account's message is sent within one attempt's deadline, and each hanging one is attempted once, a few at a time", async () => {
    const stuck = await hangingAccount("stuck-owner", webhookLimits.endpointsPerAccountMax, 2);
    const fineToken = await harness.session("fine-owner");
    const fineWebhook = await addWebhook(fineToken, `${healthyUrl}/hook`);
    const worker = startWorker();
    try {
      await until("the hanging attempts started", () => hanging.open() > 0, 5_000);

      await expectReceivedWithin(
        await sendTestTimed(fineToken, fineWebhook),
        attemptTimeoutMs,
        attemptTimeoutMs,
      );

      await expectEachAttemptedOnce(stuck.deliveryIds);
      expect(hanging.mostOpenByAccount.get("stuck-owner")).toBe(perAccountMax);
    } finally {
      await worker.close();
      await cancelPending(stuck.deliveryIds);
    }
  }, 60_000);

  it("given two workers and two accounts at a receiver that never answers, then neither account has more than its share in flight across both, and a third account's message goes at once", async () => {
    const first = await hangingAccount("stuck-first", 10, 1);
    const second = await hangingAccount("stuck-second", 10, 1);
    const fineToken = await harness.session("fine-beside-two");
    const fineWebhook = await addWebhook(fineToken, `${healthyUrl}/hook`);
    const workers = [startWorker(), startWorker()];
    try {
      await until("the hanging attempts started", () => hanging.open() > 0, 5_000);

      await expectReceivedWithin(
        await sendTestTimed(fineToken, fineWebhook),
        attemptTimeoutMs,
        attemptTimeoutMs,
      );

      await expectEachAttemptedOnce([...first.deliveryIds, ...second.deliveryIds]);
      expect(hanging.mostOpenByAccount.get("stuck-first")).toBe(perAccountMax);
      expect(hanging.mostOpenByAccount.get("stuck-second")).toBe(perAccountMax);
    } finally {
      await Promise.all(workers.map((worker) => worker.close()));
      await cancelPending([...first.deliveryIds, ...second.deliveryIds]);
    }
  }, 60_000);

  it("given an account whose three endpoints never answer, then its fourth, healthy endpoint gets its message at the first free slot of the account, not after all of theirs", async () => {
    const mixed = await hangingAccount("mixed-owner", 3, webhookLimits.pendingTestMessagesMax);
    const fineWebhook = await addWebhook(mixed.token, `${healthyUrl}/hook`);
    // Attempts of 2 s: a slot freed by one ending is taken within 1.5 s even on a slow machine, and the next
    // round of freed slots (an unfair order's earliest) is 2 s later, the fourth (after all of theirs) 6 s.
    const slowAttemptTimeoutMs = 2_000;
    const worker = startWorker(slowAttemptTimeoutMs);
    try {
      await until("the hanging attempts started", () => hanging.open() > 0, 5_000);

      // Its account's slots are all held by hanging attempts: it waits for the first of them to end.
      await expectReceivedWithin(
        await sendTestTimed(mixed.token, fineWebhook),
        slowAttemptTimeoutMs + 1_500,
        2 * slowAttemptTimeoutMs,
      );

      await expectEachAttemptedOnce(mixed.deliveryIds, slowAttemptTimeoutMs);
      expect(hanging.mostOpenByAccount.get("mixed-owner")).toBe(perAccountMax);
    } finally {
      await worker.close();
      await cancelPending(mixed.deliveryIds);
    }
  }, 60_000);
});
