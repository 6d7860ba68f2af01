import { chargeUsages } from "../../src/billing/charging/charge-usage";
import type { QueueBackend } from "../../src/billing/queue/queue-backend";
import { createPricingReadModel } from "../../src/billing/read-models/pricing-read-model";
import { ProjectionWaiter } from "../../src/ledger/projection/projection-waiter";
import { openLedger } from "../../src/ledger/store/open-ledger";
import { startReconcileUsageWorker } from "../../workers/reconcile-usage";
import { silentLogger } from "../billing/billing-ledger-fixtures";

/**
 * A reconciler in its own process, for the test that kills one mid-job: it charges the usage, says so on
 * stdout, then never finishes the job — as if the machine died between the ledger's answer and BullMQ's.
 * Configured by environment: DATABASE_URL, QUEUE_BACKEND (JSON), LOCK_DURATION_MS.
 */

const backend = JSON.parse(process.env.QUEUE_BACKEND!) as QueueBackend;
const databaseUrl = process.env.DATABASE_URL!;
const ledger = await openLedger({ databaseUrl, applicationName: "test-doomed-worker" });
const waiter = new ProjectionWaiter(ledger.pool, databaseUrl, 20);
const pricing = createPricingReadModel(ledger.pool);

startReconcileUsageWorker({
  backend,
  logger: silentLogger,
  settings: {
    concurrency: 1,
    lockDurationMs: Number(process.env.LOCK_DURATION_MS),
    stalledCheckIntervalMs: 200,
  },
  chargeUsages: async (requestIds) => {
    const outcomes = await chargeUsages(
      { store: ledger.store, waiter, pricing, clock: () => new Date(), projectionWaitTimeoutMs: 10_000 },
      requestIds,
    );
    for (const [requestId, outcome] of outcomes) {
      const said = outcome.status === "fulfilled" ? outcome.value.kind : `failed ${String(outcome.reason)}`;
      process.stdout.write(`charged ${requestId} ${said}\n`);
    }
    return new Promise(() => {});
  },
});
process.stdout.write("ready\n");
