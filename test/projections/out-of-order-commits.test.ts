import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allProjections } from "../../projections";
import { ProjectionRunner } from "../../src/ledger/projection/projection-runner";
import { verifyProjections } from "../../src/ledger/verify-projections";
import { metadata, topUp } from "../support/ledger-fixtures";
import { type LedgerHarness, openLedgerHarness } from "../support/ledger-harness";

/**
 * A projection never skips an event, including one committed out of order (contract: Projections): a
 * transaction that took its place in the log early and commits late, after later transactions committed
 * and were read, is applied once, before them, and none of them twice.
 */
describe("a transaction that took its place in the log early and commits late", () => {
  let harness: LedgerHarness;

  beforeAll(async () => {
    harness = await openLedgerHarness("out_of_order_commits");
  });
  afterAll(async () => {
    await harness?.dispose();
  });

  const toppedUp = async (accountId: string) =>
    (
      await harness.ledger.pool.query<{ topped_up_won: string }>(
        "SELECT topped_up_won::text FROM projection_balances WHERE account_kind = 'user' AND account_id = $1",
        [accountId],
      )
    ).rows[0]?.topped_up_won;

  it("given later top-ups committed and folded first, then the early one is folded once it commits, and each once", async () => {
    const runner = new ProjectionRunner({
      pool: harness.ledger.pool,
      connectionString: harness.database.url,
      store: harness.store,
      projections: allProjections,
      batchSizeMax: 2,
      standbyRetryMs: 100,
    });
    const folding = await harness.ledger.pool.connect();
    const early = await harness.ledger.pool.connect();
    try {
      await runner.prepare(folding);
      // The early transaction takes its transaction id — its place in the log — before the others start.
      await early.query("BEGIN");
      await early.query("SELECT pg_current_xact_id()");

      for (let index = 0; index < 5; index++) {
        await harness.append({
          streamId: "account-user-late",
          expectedVersion: "any",
          events: [topUp("late", "1", `later ${index}`)],
        });
      }
      // Folded meanwhile: nothing past the open transaction's place may be applied yet.
      await runner.catchUp(folding);
      expect(await toppedUp("late")).toBeUndefined();

      // Only now does the early transaction write its event, at the place it took, and commit.
      const { transactionOrderOffset } = (
        harness.store as unknown as { appendsBeside: { transactionOrderOffset: bigint } }
      ).appendsBeside;
      const event = topUp("early", "100", "early");
      await early.query(
        `INSERT INTO ledger_events (transaction_order, event_id, stream_id, stream_version, type, schema_version,
           data, metadata)
         VALUES (pg_current_xact_id()::text::bigint + $1, $2, 'account-user-early', 0, 'CreditToppedUp', 1, $3, $4)`,
        [
          String(transactionOrderOffset),
          event.eventId,
          JSON.stringify(event.event.data),
          JSON.stringify(metadata()),
        ],
      );
      await early.query("COMMIT");
      await harness.append({
        streamId: "account-user-late",
        expectedVersion: "any",
        events: [topUp("late", "1", "after the early one")],
      });
      await harness.visible();
      for (let round = 0; round < 100 && (await toppedUp("late")) !== "6"; round++) {
        await runner.catchUp(folding);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    } finally {
      await early.query("ROLLBACK").catch(() => {});
      early.release();
      folding.release();
    }

    expect(await toppedUp("early")).toBe("100");
    expect(await toppedUp("late")).toBe("6");
    expect(
      await verifyProjections({
        pool: harness.ledger.pool,
        store: harness.store,
        projections: allProjections,
      }),
    ).toEqual([]);
  });
});
