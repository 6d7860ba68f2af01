import type pg from "pg";
import type { Logger } from "pino";
import { chargeUsages } from "../src/billing/charging/charge-usage";
import type { Clock, ProjectionWaiting } from "../src/billing/commands/projection-waiting";
import type { FxRateRefresher } from "../src/billing/fx/fx-rate-refresh";
import { HoldRowCompletion } from "../src/billing/holds/hold-row-completion";
import { HoldRowsVacuum } from "../src/billing/holds/hold-rows-vacuum";
import { SettledHoldsLog } from "../src/billing/holds/settled-holds-log";
import { SweptHoldReserves } from "../src/billing/holds/swept-hold-reserves";
import { createChargeQueue } from "../src/billing/queue/charge-queue";
import type { QueueBackend } from "../src/billing/queue/queue-backend";
import { createPricingReadModel } from "../src/billing/read-models/pricing-read-model";
import { advisoryLockKeys } from "../src/database/advisory-lock-keys";
import { PeriodicLeader } from "../src/database/periodic-leader";
import { billingLimits, limits } from "../src/kernel/limits";
import { errorSummaryOf, throttledLog } from "../src/kernel/throttled-log";
import type { EventStore } from "../src/ledger/store/event-store";
import { GroupCommitAppender } from "../src/ledger/store/group-commit-appender";
import { LockBoundedAppender } from "../src/ledger/store/lock-bounded-appender";
import { PostgresEventStore } from "../src/ledger/store/postgres-event-store";
import {
  type ReconcileUsageSettings,
  type RunningWorker,
  startReconcileUsageWorker,
} from "./reconcile-usage";
import { startFxRateRefreshWorker } from "./refresh-fx-rate";
import { type OrphanHoldSweepSettings, scheduleOrphanHoldSettlement } from "./settle-orphan-holds";
import { type PendingChargeSweepSettings, schedulePendingChargeSweep } from "./sweep-pending-charges";

/**
 * Every billing worker of one process: reconciler, sweeper, FX refresh. Run it in any number of processes:
 * the reconciler runs in each, the periodic tasks (sweep, FX schedule) in the one that leads.
 */

export interface BillingWorkersDependencies {
  backend: QueueBackend;
  store: EventStore;
  database: pg.Pool;
  /** For the leader's dedicated lock session. */
  databaseUrl: string;
  waiter: ProjectionWaiting;
  refresher: FxRateRefresher;
  clock: Clock;
  logger: Logger;
  reconcile?: Partial<ReconcileUsageSettings>;
  sweep?: Partial<PendingChargeSweepSettings>;
  orphanSweep?: Partial<OrphanHoldSweepSettings>;
  fxScheduleCheckIntervalMs?: number;
  leaderStandbyRetryMs?: number;
}

export interface RunningBillingWorkers {
  /** Where more periodic tasks register (e.g. settling orphaned holds); they run in the leading process. */
  leader: Pick<PeriodicLeader, "every" | "leading">;
  close(): Promise<void>;
}

export async function startBillingWorkers(
  dependencies: BillingWorkersDependencies,
): Promise<RunningBillingWorkers> {
  const { backend, store, database, waiter, clock, logger } = dependencies;
  const pricing = createPricingReadModel(database);
  // The charges of a job, and of concurrent jobs, share one statement and one commit (group commit); a
  // statement waits only so long for an account's funds row, and a held account's charges are set apart and
  // retried with the job's backoff (lock-bounded-appender.ts).
  const chargeAppender = new LockBoundedAppender(store, {
    batchSizeMax: billingLimits.chargeAppendBatchSizeMax,
    lockWaitMs: limits.settledFundsLockWaitMs,
    accountsApartMax: limits.lockedAccountsApartMax,
  });
  const chargeStore = {
    readStream: (streamId: string) => store.readStream(streamId),
    readStreams: (streamIds: readonly string[]) => store.readStreams(streamIds),
    append: chargeAppender.append.bind(chargeAppender),
  };
  // The orphan sweep's settlements of holds in the log (placed by an earlier release) wait for their rows as
  // any append does: a sweep settles its holds one after another, and one given up would end it.
  const settlementAppender = new GroupCommitAppender(store, billingLimits.chargeAppendBatchSizeMax);
  const settlementStore = {
    readStreams: chargeStore.readStreams,
    append: settlementAppender.append.bind(settlementAppender),
  };
  const running: RunningWorker[] = [];
  // The sweeper's producer may wait for the queue: it runs in a job, not on a request.
  const chargeQueue = createChargeQueue({ backend, logger, role: "background" });
  // The orphan sweep's settlements, and those of gateways gone with rows settled, reach the log from here too.
  const settledLog =
    store instanceof PostgresEventStore
      ? startSettledHoldsLog(database, store, chargeQueue, logger)
      : undefined;
  if (settledLog) running.push(settledLog);
  const leader = new PeriodicLeader({
    connectionString: dependencies.databaseUrl,
    lockKey: advisoryLockKeys.billingLeader,
    applicationName: "won-gateway-leader",
    standbyRetryMs: dependencies.leaderStandbyRetryMs ?? billingLimits.billingLeaderStandbyRetryMs,
    runsStopWaitMs: billingLimits.queueCloseTimeoutMs,
    logger: logger.child({ component: "leader" }),
  });
  try {
    running.push(
      startReconcileUsageWorker({
        backend,
        logger,
        chargeUsages: (requestIds) =>
          chargeUsages(
            {
              store: chargeStore,
              waiter,
              pricing,
              clock,
              projectionWaitTimeoutMs: billingLimits.chargeProjectionWaitTimeoutMs,
            },
            requestIds,
          ),
        ...(dependencies.reconcile ? { settings: dependencies.reconcile } : {}),
      }),
    );
    scheduleOrphanHoldSettlement(leader, {
      database,
      completion: new HoldRowCompletion(database, billingLimits.orphanHoldsPerSweepMax),
      reserves: new SweptHoldReserves(database),
      // Without hold rows (EventStoreDB) the sweep completes none: it settles holds in the log.
      log: settledLog?.log ?? { settled: () => {} },
      store: settlementStore,
      pricing,
      queue: chargeQueue,
      clock,
      logger,
      ...(dependencies.orphanSweep ? { settings: dependencies.orphanSweep } : {}),
    });
    schedulePendingChargeSweep(leader, {
      database,
      queue: chargeQueue,
      clock,
      logger,
      ...(dependencies.sweep ? { settings: dependencies.sweep } : {}),
    });
    running.push(
      await startFxRateRefreshWorker({
        backend,
        database,
        refresher: dependencies.refresher,
        clock,
        logger,
        leader,
        ...(dependencies.fxScheduleCheckIntervalMs === undefined
          ? {}
          : { scheduleCheckIntervalMs: dependencies.fxScheduleCheckIntervalMs }),
      }),
    );
    leader.start();
  } catch (error) {
    await closeAll(leader, running, chargeQueue);
    throw error;
  }
  return { leader, close: () => closeAll(leader, running, chargeQueue) };
}

function startSettledHoldsLog(
  database: pg.Pool,
  store: PostgresEventStore,
  chargeQueue: Pick<ReturnType<typeof createChargeQueue>, "enqueueCharges">,
  logger: Logger,
): RunningWorker & { log: SettledHoldsLog } {
  const errors = throttledLog(logger, billingLimits.queueErrorLogIntervalMs);
  const vacuum = new HoldRowsVacuum({
    pool: database,
    rowsPerVacuum: limits.holdRowsVacuumAfterRows,
    intervalMinMs: limits.holdRowsVacuumIntervalMinMs,
    logger,
  });
  const settledLog = new SettledHoldsLog({
    pool: database,
    log: store.appendsBeside,
    enqueueCharges: (requestIds) =>
      void chargeQueue
        .enqueueCharges(requestIds)
        .catch((error: unknown) =>
          errors.error(
            { err: errorSummaryOf(error) },
            "enqueueing logged usages' charges failed; the pending-charge sweep enqueues them",
          ),
        ),
    vacuum,
    logger,
    batchSizeMax: limits.settledHoldsLogBatchSizeMax,
    pollIntervalMs: limits.settledHoldsLogPollIntervalMs,
    lingerMs: limits.settledHoldsLogLingerMs,
  });
  settledLog.start();
  return {
    log: settledLog,
    close: async () => {
      await settledLog.close();
      await vacuum.close();
    },
  };
}

/** The leader first: its tasks use the queues. */
async function closeAll(
  leader: PeriodicLeader,
  running: readonly RunningWorker[],
  chargeQueue: { close(): Promise<void> },
): Promise<void> {
  await leader.close();
  await Promise.all(running.map((worker) => worker.close()));
  await chargeQueue.close();
}
