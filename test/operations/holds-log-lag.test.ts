import { randomUUID } from "node:crypto";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rowEventOf } from "../../src/billing/holds/hold-row-completion";
import { SettledHoldsLog } from "../../src/billing/holds/settled-holds-log";
import type { UsageAuthorizationRequest } from "../../src/billing/holds/usage-authorizations";
import type { PostgresEventStore } from "../../src/ledger/store/postgres-event-store";
import { createDependencyProbes } from "../../src/operations/dependency-probes";
import { createProbeMetrics } from "../../src/operations/probe-metrics";
import { topUp } from "../support/ledger-fixtures";
import { type LedgerHarness, openLedgerHarness } from "../support/ledger-harness";
import { holdRowCompletionOf, logSettledHolds } from "../support/settled-holds";
import { personalHoldRequest, usageAuthorizationsOf } from "../support/usage-authorizations";

/**
 * A settled hold row the log writers cannot write (its usage stream is in the log already: a request id used
 * twice) stays in the table for an operator, its usage neither logged nor charged. Nothing else would show it
 * but a log line, so its age is a gauge an operator is paged on (docs/operations.md, "What to page on").
 */

const account = { kind: "user" as const, id: "log-lag" };

describe("the holds' log lag", () => {
  let harness: LedgerHarness;

  beforeAll(async () => {
    harness = await openLedgerHarness("holds_log_lag");
    await harness.append({
      streamId: `account-user-${account.id}`,
      expectedVersion: "no-stream",
      events: [topUp(account.id, "1000", "log lag")],
    });
  }, 60_000);
  afterAll(async () => {
    await harness?.dispose();
  });

  /** Places the hold and completes its row with a void, as a gateway whose upstream failed does. */
  async function placeAndVoid(hold: UsageAuthorizationRequest): Promise<void> {
    const [decision] = await usageAuthorizationsOf(harness.ledger.pool, harness.store).authorizeUsage([hold]);
    expect(decision).toMatchObject({ kind: "held" });
    const completed = await holdRowCompletionOf(harness.ledger.pool).complete({
      requestId: hold.data.requestId,
      settlement: rowEventOf(randomUUID(), {
        type: "UsageVoided",
        data: {
          requestId: hold.data.requestId,
          account,
          releasedWon: hold.data.estimate.estimatedWon,
          reason: "upstream-failed",
          attempts: [],
        },
        metadata: {
          actor: "system:test",
          correlationId: hold.data.requestId,
          occurredAt: new Date().toISOString(),
        },
      }),
      pendingWon: "0",
    });
    expect(completed).toBe(true);
  }

  it("given a settled row no writer can log, then the gauge shows its age until an operator removes it", async () => {
    const requestId = `req_twice_${randomUUID()}`;
    await placeAndVoid(personalHoldRequest(requestId, account.id));
    await logSettledHolds(harness.ledger.pool, harness.store);
    // The same request id held again: its row settles, but its usage stream is in the log already.
    await placeAndVoid(personalHoldRequest(requestId, account.id));
    const logLines: string[] = [];
    const writer = new SettledHoldsLog({
      pool: harness.ledger.pool,
      log: (harness.store as PostgresEventStore).appendsBeside,
      enqueueCharges: () => {},
      vacuum: { removed: () => {} },
      logger: pino({ level: "info" }, { write: (line: string) => void logLines.push(line) }),
      batchSizeMax: 500,
      pollIntervalMs: 60_000,
      lingerMs: 0,
    });
    expect(await writer.writeBatch()).toBe(1);
    expect(logLines.some((line) => line.includes("kept for an operator") && line.includes(requestId))).toBe(
      true,
    );
    const kept = await harness.ledger.pool.query<{ settled_at: Date }>(
      "SELECT settled_at FROM request_holds WHERE request_id = $1",
      [requestId],
    );
    expect(kept.rows).toHaveLength(1);

    let now = new Date(kept.rows[0]!.settled_at.getTime() + 42_000);
    const probes = createDependencyProbes({
      pool: harness.ledger.pool,
      store: harness.store,
      queueBackend: { kind: "postgresql", databaseUrl: harness.database.url },
      clock: () => now,
    });
    try {
      expect(await probes.holdsLogLagSeconds()).toBeCloseTo(42, 3);
      const metrics = await createProbeMetrics(() => probes, 2_000).metrics();
      expect(metrics).toContain("won_gateway_holds_log_lag_seconds 42");

      // Rows that can be logged leave no lag behind: only the kept one counts.
      const logged = `req_logged_${randomUUID()}`;
      await placeAndVoid(personalHoldRequest(logged, account.id));
      expect(await writer.writeBatch()).toBe(2);
      now = new Date(kept.rows[0]!.settled_at.getTime() + 50_000);
      expect(await probes.holdsLogLagSeconds()).toBeCloseTo(50, 3);

      await harness.ledger.pool.query("DELETE FROM request_holds WHERE request_id = $1", [requestId]);
      expect(await probes.holdsLogLagSeconds()).toBe(0);
    } finally {
      await probes.close();
    }
  });
});
