import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appendSyntheticLedger } from "../../../bench/support/synthetic-ledger";
import { allProjections } from "../../../projections";
import { defineTable, type ProjectionDefinition } from "../../../src/ledger/projection/projection";
import { applySqlFoldBatch } from "../../../src/ledger/projection/projection-batch-sql";
import { ProjectionRunner } from "../../../src/ledger/projection/projection-runner";
import { otherEventRows } from "../../../src/ledger/rebuild/parsed-events";
import { logStart } from "../../../src/ledger/store/log-position";
import { verifyProjections } from "../../../src/ledger/verify-projections";
import { topUp, usageCharge } from "../../support/ledger-fixtures";
import { type LedgerHarness, openLedgerHarness } from "../../support/ledger-harness";

/**
 * On the PostgreSQL store the runner folds each live batch by the projections' SQL folds, the same
 * statements a rebuild runs on its chunks, into the projections' own tables.
 */

/** Says which of its two folds wrote each row. */
const whoFoldedTable = defineTable<{ event_id: string; folded_by: string }>({
  name: "projection_test_who_folded",
  columns: { event_id: "text", folded_by: "text" },
  primaryKey: ["event_id"],
});
const whoFolded: ProjectionDefinition = {
  name: "test-who-folded",
  version: 1,
  handles: new Set(["CreditToppedUp"]),
  tables: [whoFoldedTable],
  evolve(rows, event) {
    rows.put(whoFoldedTable, { event_id: event.eventId, folded_by: "evolve" });
  },
  sqlFold: {
    statements: (into) => [
      `INSERT INTO ${into(whoFoldedTable)} (event_id, folded_by)
       SELECT event_id, 'sql' FROM ${otherEventRows.table} WHERE type = 'CreditToppedUp'`,
    ],
  },
};

describe("the projection runner on PostgreSQL", () => {
  let harness: LedgerHarness;

  beforeAll(async () => {
    harness = await openLedgerHarness("projection_batch_sql");
    await appendSyntheticLedger(harness.store, { eventCount: 3_000, seed: 11, userCount: 20 });
    // Corrections (C10), each appended apart from the charge it corrects: in a later batch.
    const account = { kind: "user", id: "batch-corrected" } as const;
    for (const [index, delivered] of ["12.5", "0.25"].entries()) {
      const requestId = `batch-corrected-${index}`;
      const first = randomUUID();
      await harness.append(usageCharge(account, requestId, "2026-10-31T14:59:59.999Z", "7", null, first));
      await harness.append({
        streamId: `account-user-${account.id}`,
        expectedVersion: "any",
        events: [topUp(account.id, "100", `between ${index}`)],
      });
      const difference = (Number(delivered) - 7).toString();
      const correction = usageCharge(account, requestId, "2026-10-31T14:59:59.999Z", difference, {
        correctsEventId: first,
        correctedAmountWon: "7",
        deliveredWon: delivered,
      });
      // Charged a day after the estimate it corrects: the billing history says when the charge became whole.
      const { event } = correction.events[0]!;
      event.metadata = { ...event.metadata, occurredAt: `2026-11-01T00:00:0${index}.000Z` };
      await harness.append(correction);
    }
    await harness.visible();
  }, 120_000);
  afterAll(async () => {
    await harness?.dispose();
  });

  it("given batches of seven events, splitting requests and corrections across them, then every row is the TypeScript fold's", async () => {
    const runner = new ProjectionRunner({
      pool: harness.ledger.pool,
      connectionString: harness.database.url,
      store: harness.store,
      projections: allProjections,
      batchSizeMax: 7,
      standbyRetryMs: 100,
    });
    const client = await harness.ledger.pool.connect();
    try {
      await runner.prepare(client);
      const applied = await runner.catchUp(client);
      expect(applied).toBeGreaterThan(3_000);
    } finally {
      client.release();
    }
    expect(await verifyProjections({ ...contextOf(harness), projections: allProjections })).toEqual([]);
    const corrected = await harness.ledger.pool.query(
      `SELECT request_id, amount_won::text, charged_at FROM projection_billing_history
       WHERE request_id LIKE 'batch-corrected-%' ORDER BY request_id`,
    );
    expect(corrected.rows).toEqual([
      {
        request_id: "batch-corrected-0",
        amount_won: "12.5",
        charged_at: new Date("2026-11-01T00:00:00.000Z"),
      },
      {
        request_id: "batch-corrected-1",
        amount_won: "0.25",
        charged_at: new Date("2026-11-01T00:00:01.000Z"),
      },
    ]);
  }, 120_000);

  it("folds by the SQL fold where a projection has one", async () => {
    const runner = new ProjectionRunner({
      pool: harness.ledger.pool,
      connectionString: harness.database.url,
      store: harness.store,
      projections: [whoFolded],
      batchSizeMax: 500,
      standbyRetryMs: 100,
    });
    const client = await harness.ledger.pool.connect();
    try {
      await runner.prepare(client);
      await runner.catchUp(client);
    } finally {
      client.release();
    }
    const folded = await harness.ledger.pool.query<{ folded_by: string; rows: string }>(
      `SELECT folded_by, count(*)::text AS rows FROM ${whoFoldedTable.name} GROUP BY folded_by`,
    );
    const topUps = await harness.ledger.pool.query<{ count: string }>(
      "SELECT count(*)::text AS count FROM ledger_events WHERE type = 'CreditToppedUp'",
    );
    expect(folded.rows).toEqual([{ folded_by: "sql", rows: topUps.rows[0]!.count }]);
  }, 60_000);

  it("given a batch whose events are not the log's range it names, then it fails and applies nothing", async () => {
    const events = await harness.store.readAll({ after: logStart, limit: 50 });
    const topUps = events.filter((event) => event.type === "CreditToppedUp");
    expect(topUps.length).toBeGreaterThan(0);
    const client = await harness.ledger.pool.connect();
    try {
      await client.query("BEGIN");
      await client.query(`DELETE FROM ${whoFoldedTable.name}`);
      // The range starts before the first event read: the log holds more there than the batch.
      const skipped = { after: logStart, events: events.slice(events.indexOf(topUps[0]!) + 1) };
      await expect(applySqlFoldBatch(client, [whoFolded], skipped, false)).rejects.toThrow(
        /parsed \d+ events in the database but read \d+/,
      );
      const rows = await client.query(`SELECT 1 FROM ${whoFoldedTable.name}`);
      expect(rows.rowCount).toBe(0);
      await client.query("ROLLBACK");
    } finally {
      client.release();
    }
  });
});

function contextOf(harness: LedgerHarness) {
  return { pool: harness.ledger.pool, store: harness.store };
}
