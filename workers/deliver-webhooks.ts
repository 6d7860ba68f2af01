import { randomUUID } from "node:crypto";
import type pg from "pg";
import type { Logger } from "pino";
import { detectClosedStatements } from "../src/billing/alerts/statement-closed-alerts";
import { type HostLookup, systemHostLookup } from "../src/billing/alerts/webhook-address";
import { webhookMetrics } from "../src/billing/alerts/webhook-metrics";
import {
  type BalanceCheckCursor,
  detectLowBalances,
  forgetRetiredSecrets,
  leaseDueMessages,
  type OutboxMessage,
  recordAttempt,
  releaseLease,
  sweepRemovedEndpoints,
} from "../src/billing/alerts/webhook-outbox";
import { sendWebhook } from "../src/billing/alerts/webhook-sender";
import { signedHeaders, signingSecretsAt } from "../src/billing/alerts/webhook-signing";
import { webhookLimits } from "../src/kernel/limits";
import { errorSummaryOf, throttledLog } from "../src/kernel/throttled-log";

/**
 * The webhook worker (C14), in every worker process: leases due messages of the outbox (so two workers
 * never send one at once; a dead worker's lease lapses and another sends it), a few of one account's at a
 * time and the slots going round the accounts (so one account's hanging receivers hold up no one else's),
 * signs each attempt afresh, and reschedules a failed one by the retry schedule until the retry window has
 * passed (a 410 Gone is not retried). It also looks for accounts newly below their low-funds threshold and
 * for months whose statements became final, off the request path. Each kind of pass runs on its own, so a
 * slow receiver holds up neither the checks nor other receivers for longer than an attempt's deadline;
 * stopping ends the attempts in flight (their messages are due again at once). The schedule, window and poll
 * interval are options so that tests can run them in seconds.
 */

export interface WebhookWorkerSettings {
  pollIntervalMs: number;
  leaseMs: number;
  /** An attempt's deadline, from its start to its answer's status (webhook-sender.ts). */
  attemptTimeoutMs: number;
  retryDelaysMs: readonly number[];
  retryWindowMs: number;
  batchSizeMax: number;
  /** Attempts of one account in flight at once across every worker (webhook-outbox.ts, leaseDueMessages). */
  attemptsInFlightPerAccountMax: number;
  allowPrivateNetworks: boolean;
  /** How long an attempt waits for its receiver's addresses, at each look-up (webhook-address.ts). */
  hostResolutionTimeoutMs: number;
  /** Where receivers' addresses come from: the system's resolver, or a test's name server. */
  lookupHost: HostLookup;
  balanceCheckIntervalMs: number;
  /** Accounts one low-funds pass checks; the next pass goes on after the last one, wrapping around. */
  balanceCheckAccountsMax: number;
}

export const defaultWebhookWorkerSettings: WebhookWorkerSettings = {
  pollIntervalMs: webhookLimits.deliveryPollIntervalMs,
  leaseMs: webhookLimits.deliveryLeaseMs,
  attemptTimeoutMs: webhookLimits.deliveryTimeoutMs,
  retryDelaysMs: webhookLimits.retryDelaysMs,
  retryWindowMs: webhookLimits.retryWindowMs,
  batchSizeMax: webhookLimits.deliveryBatchSizeMax,
  attemptsInFlightPerAccountMax: webhookLimits.deliveryAttemptsInFlightPerAccountMax,
  allowPrivateNetworks: false,
  hostResolutionTimeoutMs: webhookLimits.hostResolutionTimeoutMs,
  lookupHost: systemHostLookup,
  balanceCheckIntervalMs: webhookLimits.balanceCheckIntervalMs,
  balanceCheckAccountsMax: webhookLimits.balanceCheckAccountsMax,
};

export interface RunningWebhookWorker {
  /** One pass now (tests), as the timer would, resolving once its attempts ended: how many it made. */
  deliverDue(): Promise<number>;
  /** One low-funds pass now (tests), as the timer would: the accounts alerted. */
  checkBalances(): Promise<number>;
  close(): Promise<void>;
}

/**
 * When the attempt after `attempts` failed ones goes, or null when the retry window is over: after the
 * schedule's delay, or the receiver's `Retry-After` when that is longer (Standard Webhooks: a receiver under
 * load says when to come back). A delay that would pass the window's end is cut to it: the last attempt is
 * made as the window closes, so a receiver back within the window (C14: retried for 24 h) gets the message.
 */
export function nextAttemptAt(
  message: Pick<OutboxMessage, "attempts" | "createdAt">,
  now: Date,
  settings: Pick<WebhookWorkerSettings, "retryDelaysMs" | "retryWindowMs">,
  retryAfterMs = 0,
): Date | null {
  const delays = settings.retryDelaysMs;
  const delayMs = Math.max(delays[Math.min(message.attempts, delays.length - 1)] ?? 0, retryAfterMs);
  const windowEndMs = message.createdAt.getTime() + settings.retryWindowMs;
  if (now.getTime() >= windowEndMs) return null;
  return new Date(Math.min(now.getTime() + delayMs, windowEndMs));
}

async function deliverOne(
  database: pg.Pool,
  owner: string,
  message: OutboxMessage,
  settings: WebhookWorkerSettings,
  stopping: AbortSignal,
): Promise<void> {
  // Signed with the secrets valid as the attempt starts: a retry after a rotation carries the new one too.
  const startedAt = new Date();
  const headers = signedHeaders(
    signingSecretsAt(message, startedAt),
    message.deliveryId,
    startedAt,
    message.body,
  );
  const sent = await sendWebhook({
    url: message.url,
    headers,
    body: message.body,
    allowPrivateNetworks: settings.allowPrivateNetworks,
    timeoutMs: settings.attemptTimeoutMs,
    hostResolutionTimeoutMs: settings.hostResolutionTimeoutMs,
    lookupHost: settings.lookupHost,
    signal: stopping,
  });
  // Cut short by the worker stopping: due again at once, elsewhere or after the restart, and not counted.
  if (stopping.aborted && sent.outcome !== "delivered") {
    await releaseLease(database, owner, message);
    return;
  }
  if (sent.outcome === "delivered") {
    await recordAttempt(database, owner, message, { delivered: true, responseStatus: sent.responseStatus });
    webhookMetrics.attempted("delivered");
    return;
  }
  // 410 Gone: the receiver says it wants no more messages (Standard Webhooks), so this one is not retried.
  const next =
    sent.responseStatus === 410 ? null : nextAttemptAt(message, new Date(), settings, sent.retryAfterMs);
  await recordAttempt(database, owner, message, {
    delivered: false,
    responseStatus: sent.responseStatus,
    error: sent.error,
    nextAttemptAt: next,
  });
  webhookMetrics.attempted(next === null ? "failed" : "retried");
}

export function startWebhookWorker(
  database: pg.Pool,
  logger: Logger,
  overrides: Partial<WebhookWorkerSettings> = {},
): RunningWebhookWorker {
  const settings = { ...defaultWebhookWorkerSettings, ...overrides };
  const owner = `worker-${randomUUID()}`;
  const stopping = new AbortController();
  const passes = new Set<Promise<unknown>>();

  // Attempts run beside the passes, each in one of `deliveryConcurrencyMax` slots: a pass leases only what
  // the free slots can take and starts it, so a slow receiver holds its slot until its deadline and nothing
  // else. An attempt that fails to record its end (the database away) leaves its lease to lapse.
  const attempts = new Set<Promise<void>>();
  const attemptErrors = throttledLog(logger, webhookLimits.passErrorLogIntervalMs);
  async function startDue(): Promise<Promise<void>[]> {
    const free = webhookLimits.deliveryConcurrencyMax - attempts.size;
    if (free <= 0) return [];
    const due = await leaseDueMessages(database, owner, {
      count: Math.min(free, settings.batchSizeMax),
      leaseMs: settings.leaseMs,
      perAccountMax: settings.attemptsInFlightPerAccountMax,
    });
    return due.map((message) => {
      const attempt: Promise<void> = deliverOne(database, owner, message, settings, stopping.signal)
        .then(() => attemptErrors.recovered("webhooks: delivery attempts record again"))
        .catch((error: unknown) =>
          attemptErrors.error(
            { err: errorSummaryOf(error) },
            "webhooks: a delivery attempt failed to record",
          ),
        )
        .finally(() => attempts.delete(attempt));
      attempts.add(attempt);
      return attempt;
    });
  }

  async function deliverDue(): Promise<number> {
    const started = await startDue();
    await Promise.all(started);
    return started.length;
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

  // Each kind of pass runs alone: a timer that fires while its last pass still runs waits for the next one.
  // A pass that fails (the database away) fails again every poll: the first failure is logged, then one a
  // minute, then a line when it works again.
  const tick = (work: () => Promise<unknown>, what: string) => {
    const errors = throttledLog(logger, webhookLimits.passErrorLogIntervalMs);
    let running = false;
    return () => {
      if (stopping.signal.aborted || running) return;
      running = true;
      const pass = work()
        .then(() => errors.recovered(`webhooks: ${what} works again`))
        .catch((error: unknown) => errors.error({ err: errorSummaryOf(error) }, `webhooks: ${what} failed`))
        .finally(() => {
          running = false;
          passes.delete(pass);
        });
      passes.add(pass);
    };
  };
  const delivery = setInterval(tick(startDue, "delivery pass"), settings.pollIntervalMs);
  const statements = setInterval(
    tick(() => detectClosedStatements(database, new Date()), "closed statements check"),
    webhookLimits.statementCheckIntervalMs,
  );
  const balances = setInterval(tick(checkBalances, "low-funds check"), settings.balanceCheckIntervalMs);
  const sweep = setInterval(
    tick(async () => {
      await sweepRemovedEndpoints(database, webhookLimits.secretWithoutEndpointKeptMs);
      await forgetRetiredSecrets(database);
    }, "removed webhooks and retired secrets sweep"),
    webhookLimits.removedEndpointSweepIntervalMs,
  );
  return {
    deliverDue,
    checkBalances,
    async close() {
      stopping.abort();
      clearInterval(delivery);
      clearInterval(balances);
      clearInterval(statements);
      clearInterval(sweep);
      await Promise.all([...passes, ...attempts]);
    },
  };
}
