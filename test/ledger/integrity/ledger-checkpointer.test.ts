import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkpointsAfter, latestCheckpoint } from "../../../src/ledger/integrity/ledger-checkpoint";
import { runCheckpointer } from "../../../src/ledger/integrity/ledger-checkpointer";
import { verifyIntegrity } from "../../../src/ledger/integrity/ledger-integrity";
import { LedgerSigningKey } from "../../../src/ledger/integrity/ledger-signing-key";
import { topUp } from "../../support/ledger-fixtures";
import { type LedgerHarness, openLedgerHarness } from "../../support/ledger-harness";

const key = LedgerSigningKey.parse(Buffer.alloc(32, 3).toString("base64url"));

describe("the checkpointer in worker processes", () => {
  let harness: LedgerHarness;

  beforeAll(async () => {
    harness = await openLedgerHarness("checkpointer");
  });
  afterAll(async () => {
    await harness?.dispose();
  });

  it("seals full checkpoints at once and the rest after the interval, with one leader among three", async () => {
    const stop = new AbortController();
    const options = {
      connectionString: harness.database.url,
      key,
      seal: { eventsMax: 5, intervalMs: 1_500, checkpointsMax: 100 },
      pollIntervalMs: 50,
    };
    // 12 events in place before any runner starts: 5 + 5 sealed at once, 2 only after the interval.
    const outcomes = await harness.store.appendBatch(
      Array.from({ length: 11 }, (_, index) => ({
        streamId: `account-user-c${index % 4}`,
        expectedVersion: "any" as const,
        events: [topUp(`c${index % 4}`, "1", `top-up ${index}`)],
      })),
    );
    expect(outcomes.every((outcome) => outcome.status === "fulfilled")).toBe(true);
    await harness.append({
      streamId: "account-user-c4",
      expectedVersion: "no-stream",
      events: [topUp("c4", "1", "last")],
    });
    await harness.visible();
    const errors: unknown[] = [];
    const runners = [0, 1, 2].map(() =>
      runCheckpointer({ ...options, onError: (error) => errors.push(error) }, stop.signal),
    );
    try {
      // Read by its sequence: the checkpoint after it comes 1.5 s later, a window a stalled poll could miss.
      const full = await waitFor(async () => (await checkpointsAfter(harness.ledger.pool, 1, 1))[0]);
      expect(full.eventCount).toBe(5);
      // The last 2 events wait for the interval, then are sealed on their own.
      const partial = await waitFor(async () => {
        const latest = await latestCheckpoint(harness.ledger.pool);
        return latest?.sequence === 3 ? latest : undefined;
      });
      expect(partial.eventCount).toBe(2);
      expect(partial.sealedAt.getTime() - full.sealedAt.getTime()).toBeGreaterThanOrEqual(1_500);
      const report = await verifyIntegrity(harness.ledger.pool, key.publicKey);
      expect(report.problems).toEqual([]);
      expect(report.checkpointCount).toBe(3);
      expect(errors).toEqual([]);
    } finally {
      stop.abort();
      await Promise.all(runners);
    }
  }, 30_000);
});

async function waitFor<T>(probe: () => Promise<T | undefined>): Promise<T> {
  for (let attempt = 0; attempt < 400; attempt++) {
    const value = await probe();
    if (value !== undefined) return value;
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  throw new Error("timed out");
}
