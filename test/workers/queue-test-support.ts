import { randomUUID } from "node:crypto";
import { afterEach, beforeEach } from "vitest";
import type { QueueBackend } from "../../src/billing/queue/queue-backend";

import { removeDeploymentQueueData, removeQueueData } from "../../src/billing/queue/remove-queue-data";

export { removeDeploymentQueueData, removeQueueData };

import { advisoryLockKeys } from "../../src/database/advisory-lock-keys";
import { PeriodicLeader } from "../../src/database/periodic-leader";
import type { AccountReference } from "../../src/ledger/events";
import {
  creditToppedUp,
  fxRateUpdated,
  modelPriceSet,
  runProjections,
  silentLogger,
} from "../billing/billing-ledger-fixtures";
import { type LedgerHarness, openLedgerHarness } from "../support/ledger-harness";

/**
 * Both queue backends (C2): PostgreSQL always (BullMQ's schema inside the test's own database), Redis when
 * REDIS_URL is set — then it must be reachable, or the test fails. Each Redis case gets its own key prefix.
 */

export interface QueueBackendCase {
  name: string;
  backendFor(harness: LedgerHarness): QueueBackend;
}

const redisUrl = process.env.REDIS_URL;

export const queueBackendCases: QueueBackendCase[] = [
  {
    name: "PostgreSQL backend",
    backendFor: (harness) => ({ kind: "postgresql", databaseUrl: harness.database.url }),
  },
  ...(redisUrl === undefined
    ? []
    : [
        {
          name: "Redis backend",
          backendFor: (): QueueBackend => ({ kind: "redis", redisUrl, prefix: `test-${randomUUID()}` }),
        },
      ]),
];

/** Polls until `check` holds; fails with `description` after `timeoutMs`. */
export async function eventually(description: string, check: () => Promise<boolean>, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 0; attempt < 100_000; attempt += 1) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${description}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * What the worker tests charge against: alpha-5.4 at 1 USD per 1M tokens of each kind, 1,000 KRW/USD on
 * 2026-11-20 (Seoul), and ₩100 on `account` — so a 1,000 + 500-token usage costs ₩1.5.
 */
export async function givenChargeableLedger(
  harness: LedgerHarness,
  account: AccountReference,
): Promise<void> {
  const settingsAt = "2026-11-19T15:00:00.000Z";
  await harness.append(
    modelPriceSet("alpha-5.4", { input: "1", cachedInput: "1", output: "1" }, settingsAt),
    fxRateUpdated({ appliesOn: "2026-11-20", rateDate: "2026-11-19", rateKrwPerUsd: "1000" }, settingsAt),
    creditToppedUp(account, "100", settingsAt),
  );
}

export interface ChargeableLedgerFixture {
  harness: LedgerHarness;
  backend: QueueBackend;
  projections: Awaited<ReturnType<typeof runProjections>>;
  /** Run after each test, last registered first, before the projections stop and the ledger goes. */
  closers: (() => Promise<void>)[];
}

/**
 * For each test of the calling suite: a fresh chargeable ledger (`givenChargeableLedger`) with its
 * projections running, on the case's queue backend; everything is closed and removed after the test.
 */
export function useChargeableLedger(
  label: string,
  backendCase: QueueBackendCase,
  account: AccountReference,
): ChargeableLedgerFixture {
  const fixture = { closers: [] as (() => Promise<void>)[] } as ChargeableLedgerFixture;
  let sequence = 0;
  beforeEach(async () => {
    fixture.harness = await openLedgerHarness(`${label}_${sequence++}`);
    fixture.backend = backendCase.backendFor(fixture.harness);
    await givenChargeableLedger(fixture.harness, account);
    fixture.projections = await runProjections(fixture.harness);
  });
  afterEach(async () => {
    for (const close of fixture.closers.splice(0).reverse()) await close();
    await fixture.projections.stop();
    await removeQueueData(fixture.backend);
    await fixture.harness.dispose();
  });
  return fixture;
}

/** A started leader of the periodic tasks on the test's database (lock retried every 100 ms). */
export function startTestLeader(databaseUrl: string): PeriodicLeader {
  const leader = new PeriodicLeader({
    connectionString: databaseUrl,
    lockKey: advisoryLockKeys.billingLeader,
    applicationName: "test-leader",
    standbyRetryMs: 100,
    runsStopWaitMs: 5_000,
    logger: silentLogger,
  });
  leader.start();
  return leader;
}
