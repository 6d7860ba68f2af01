import { setTimeout as delay } from "node:timers/promises";
import type { Router } from "express";
import type pg from "pg";
import type { Logger } from "pino";
import { startBillingWorkers } from "../workers/billing-workers";
import { startWebhookWorker } from "../workers/deliver-webhooks";
import type { ProjectionWaiting } from "./billing/commands/projection-waiting";
import { seedBilling } from "./billing/commands/seed-billing";
import { createFxRateRefresher } from "./billing/fx/fx-rate-refresh";
import type { ChargeEnqueuer } from "./billing/queue/charge-enqueuer";
import { createChargeQueue } from "./billing/queue/charge-queue";
import { type QueueBackend, queueBackendOf } from "./billing/queue/queue-backend";
import type { Config } from "./config";
import { createAccountRouter } from "./gateway/account/account-router";
import { createAdminRouter } from "./gateway/admin/admin-router";
import { billingLimits } from "./kernel/limits";
import { errorSummaryOf } from "./kernel/throttled-log";
import type { OrganizationRoleService } from "./keys/organization-role-service";
import type { EventStore } from "./ledger/store/event-store";

/**
 * Billing, wired for the composition root: the charge queue the gateway enqueues on (available before the
 * service starts), the admin and account routers, and — once the service's ledger is up — the first-start
 * seeds and, in worker roles, the workers.
 */

/** The parts of the running service billing uses (structurally `ServiceParts`). */
export interface BillingServiceParts {
  ledger: { pool: pg.Pool; store: EventStore };
  waiter: ProjectionWaiting;
  /** The admin API checks checkpoint signatures against it (absent: not checked). */
  ledgerPublicKey?: Buffer | undefined;
}

export interface Billing {
  /** Where this process's queues are: every process of the deployment finds the same (queue-backend.ts). */
  queueBackend: QueueBackend;
  charges: ChargeEnqueuer;
  adminRouter(parts: BillingServiceParts): Router;
  /** `roles`: whose organization charges a session reads (C14). */
  accountRouter(parts: BillingServiceParts & { roles: Pick<OrganizationRoleService, "roleOf"> }): Router;
  /**
   * Seeds catalog prices and the default FX rate (the rate's check may go on in the background past
   * `firstStartSeedWaitMs`), then starts the workers when asked to.
   */
  attach(parts: BillingServiceParts): Promise<void>;
  close(): Promise<void>;
}

export async function startBilling(options: {
  config: Config;
  databaseUrl: string;
  logger: Logger;
  runWorkers: boolean;
  /** Redis key prefix, where the deployment's (named after its ledger's id) is not wanted: a test's own. */
  queuePrefix?: string;
  limits?: { firstStartSeedWaitMs?: number };
}): Promise<Billing> {
  const { config, logger } = options;
  const clock = () => new Date();
  // The ledger's id names the queues on Redis: its schema is migrated here, before the queues open.
  const backend = await queueBackendOf({
    redisUrl: config.redisUrl,
    databaseUrl: options.databaseUrl,
    schema: "migrate",
    ...(options.queuePrefix === undefined ? {} : { prefix: options.queuePrefix }),
  });
  const charges = createChargeQueue({ backend, logger });
  const closers: (() => Promise<void>)[] = [() => charges.close()];
  let refresher: ReturnType<typeof createFxRateRefresher> | undefined;

  function refresherFor(parts: BillingServiceParts) {
    refresher ??= createFxRateRefresher({
      store: parts.ledger.store,
      clock,
      logger,
      authkey: config.koreaEximAuthKey,
      url: config.koreaEximUrl,
    });
    return refresher;
  }

  return {
    queueBackend: backend,
    charges,
    adminRouter: (parts) =>
      createAdminRouter({
        store: parts.ledger.store,
        database: parts.ledger.pool,
        waiter: parts.waiter,
        fxRateRefresher: refresherFor(parts),
        clock,
        ledgerPublicKey: parts.ledgerPublicKey,
      }),
    accountRouter: (parts) => createAccountRouter({ database: parts.ledger.pool, roles: parts.roles }),
    async attach(parts) {
      const seedsStop = new AbortController();
      const seeding = seedBilling(
        {
          store: parts.ledger.store,
          database: parts.ledger.pool,
          waiter: parts.waiter,
          clock,
          logger,
          defaultFxRateKrwPerUsd: config.defaultFxRateKrwPerUsd,
        },
        { signal: seedsStop.signal },
      );
      closers.push(async () => {
        seedsStop.abort();
        await seeding.catch(() => {});
      });
      // A seed that fails in time fails the start; the default-rate check may outlast the wait (a long
      // transaction elsewhere on the server holds the projections back) and then goes on in the background.
      const seededInTime = await Promise.race([
        seeding.then(() => true),
        delay(options.limits?.firstStartSeedWaitMs ?? billingLimits.firstStartSeedWaitMs, false, {
          ref: false,
        }),
      ]);
      if (!seededInTime) {
        seeding.catch((error: unknown) =>
          logger.error(
            { err: errorSummaryOf(error) },
            "first-start seeds failed; the next start retries them",
          ),
        );
      }
      if (!options.runWorkers) return;
      const workers = await startBillingWorkers({
        backend,
        store: parts.ledger.store,
        database: parts.ledger.pool,
        databaseUrl: options.databaseUrl,
        waiter: parts.waiter,
        refresher: refresherFor(parts),
        clock,
        logger,
        // The sweep judges the gateways by the deployment's timings (settlement-timings.ts).
        orphanSweep: {
          intervalMs: config.settlementTimings.orphanSweepIntervalMs,
          presumedDeadAfterMs: config.settlementTimings.presumedDeadAfterMs,
          observationGapMaxMs: config.settlementTimings.observationGapMaxMs,
          reserveMs: config.settlementTimings.holdLifetimeMs,
        },
      });
      // After the charge queue: closing it sends the charges it still holds, which this process's
      // reconciler can then take before it stops.
      closers.push(() => workers.close());
      const webhooks = startWebhookWorker(parts.ledger.pool, logger, {
        allowPrivateNetworks: config.webhookAllowPrivateNetworks,
      });
      closers.push(() => webhooks.close());
    },
    async close() {
      for (const close of closers) await close();
      await refresher?.close();
    },
  };
}
