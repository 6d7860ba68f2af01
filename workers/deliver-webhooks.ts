import { randomUUID } from "node:crypto";
import type pg from "pg";
import type { Logger } from "pino";
import { detectClosedStatements } from "../src/billing/alerts/statement-closed-alerts";
import {
  type BalanceCheckCursor,
  detectLowBalances,
  leaseDueMessages,
  type OutboxMessage,
  recordAttempt,
} from "../src/billing/alerts/webhook-outbox";
import { sendWebhook } from "../src/billing/alerts/webhook-sender";
import { signedHeaders } from "../src/billing/alerts/webhook-signing";
import { webhookLimits } from "../src/kernel/limits";
import { errorSummaryOf, throttledLog } from "../src/kernel/throttled-log";

/**
 * The webhook worker (C14), in every worker process: leases due messages of the outbox (so two workers
 * never send one at once; a dead worker's lease lapses and another sends it), signs each attempt afresh, and
 * reschedules a failed one by the retry schedule until the retry window has passed. It also looks for
 * accounts newly below their low-funds threshold and for months whose statements became final, off the request
 * path. The schedule, window and poll interval
 * are options so that tests can run them in seconds.
 */

export interface WebhookWorkerSettings {
  pollIntervalMs: number;
  leaseMs: number;
  retryDelaysMs: readonly number[];
  retryWindowMs: number;
  batchSizeMax: number;
  allowPrivateNetworks: boolean;
  balanceCheckIntervalMs: number;
  /** Accounts one low-funds pass checks; the next pass goes on after the last one, wrapping around. */
  balanceCheckAccountsMax: number;
}

export const defaultWebhookWorkerSettings: WebhookWorkerSettings = {
  pollIntervalMs: webhookLimits.deliveryPollIntervalMs,
  leaseMs: webhookLimits.deliveryLeaseMs,
  retryDelaysMs: webhookLimits.retryDelaysMs,
  retryWindowMs: webhookLimits.retryWindowMs,
  batchSizeMax: webhookLimits.deliveryBatchSizeMax,
  allowPrivateNetworks: false,
  balanceCheckIntervalMs: webhookLimits.balanceCheckIntervalMs,
  balanceCheckAccountsMax: webhookLimits.balanceCheckAccountsMax,
};

export interface RunningWebhookWorker {
  /** One pass now (tests), as the timer would. */
  deliverDue(): Promise<number>;
  /** One low-funds pass now (tests), as the timer would: the accounts alerted. */
  checkBalances(): Promise<number>;
  close(): Promise<void>;
}

/** When the attempt after `attempts` failed ones goes, or null when the retry window is over. */
export function nextAttemptAt(
  message: Pick<OutboxMessage, "attempts" | "createdAt">,
  now: Date,
  settings: Pick<WebhookWorkerSettings, "retryDelaysMs" | "retryWindowMs">,
): Date | null {
  const delays = settings.retryDelaysMs;
  const delayMs = delays[Math.min(message.attempts, delays.length - 1)] ?? 0;
  const next = new Date(now.getTime() + delayMs);
  return next.getTime() - message.createdAt.getTime() > settings.retryWindowMs ? null : next;
}

async function deliverOne(
  database: pg.Pool,
  owner: string,
  message: OutboxMessage,
  settings: WebhookWorkerSettings,
): Promise<void> {
  const headers = signedHeaders(message.secret, message.deliveryId, new Date(), message.body);
  const sent = await sendWebhook({
    url: message.url,
    headers,
    body: message.body,
    allowPrivateNetworks: settings.allowPrivateNetworks,
  });
  if (sent.outcome === "delivered") {
    await recordAttempt(database, owner, message, { delivered: true, responseStatus: sent.responseStatus });
    return;
  }
  await recordAttempt(database, owner, message, {
    delivered: false,
    responseStatus: sent.responseStatus,
    error: sent.error,
    nextAttemptAt: nextAttemptAt(message, new Date(), settings),
  });
}

export function startWebhookWorker(
  database: pg.Pool,
  logger: Logger,
  overrides: Partial<WebhookWorkerSettings> = {},
): RunningWebhookWorker {
  const settings = { ...defaultWebhookWorkerSettings, ...overrides };
  const owner = `worker-${randomUUID()}`;
  let closed = false;
  let running: Promise<unknown> = Promise.resolve();

  async function deliverDue(): Promise<number> {
    const due = await leaseDueMessages(database, owner, settings.batchSizeMax, settings.leaseMs);
    for (let start = 0; start < due.length; start += webhookLimits.deliveryConcurrencyMax) {
      const slice = due.slice(start, start + webhookLimits.deliveryConcurrencyMax);
      await Promise.all(slice.map((message) => deliverOne(database, owner, message, settings)));
    }
    return due.length;
  }

  // Where the next low-funds pass starts (in memory: a restarted worker starts again from the first account).
  let balanceCursor: BalanceCheckCursor = null;
  async function checkBalances(): Promise<number> {
    const pass = await detectLowBalances(
      database,
      new Date(),
      settings.balanceCheckAccountsMax,
      balanceCursor,
    );
    balanceCursor = pass.next;
    return pass.alerted;
  }

  // A pass that fails (the database away) fails again every poll: the first failure is logged, then one a
  // minute, then a line when it works again.
  const tick = (work: () => Promise<unknown>, what: string) => {
    const errors = throttledLog(logger, webhookLimits.passErrorLogIntervalMs);
    return () => {
      if (closed) return;
      running = running
        .then(work)
        .then(() => errors.recovered(`webhooks: ${what} works again`))
        .catch((error: unknown) => errors.error({ err: errorSummaryOf(error) }, `webhooks: ${what} failed`));
    };
  };
  const delivery = setInterval(tick(deliverDue, "delivery pass"), settings.pollIntervalMs);
  const statements = setInterval(
    tick(() => detectClosedStatements(database, new Date()), "closed statements check"),
    webhookLimits.statementCheckIntervalMs,
  );
  const balances = setInterval(tick(checkBalances, "low-funds check"), settings.balanceCheckIntervalMs);
  return {
    deliverDue,
    checkBalances,
    async close() {
      closed = true;
      clearInterval(delivery);
      clearInterval(balances);
      clearInterval(statements);
      await running;
    },
  };
}
