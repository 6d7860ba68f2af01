import type pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrate } from "../../../src/database/migrations";
import { createPool } from "../../../src/database/pool";
import { parseBatch } from "../../../src/ledger/rebuild/parsed-events";
import { ledgerSchema } from "../../../src/ledger/schema/ledger-schema";
import type { LogPosition } from "../../../src/ledger/store/log-position";
import { PostgresEventStore } from "../../../src/ledger/store/postgres-event-store";
import { createTestDatabase, type TestDatabase } from "../../support/database";
import { topUp, usageCharge } from "../../support/ledger-fixtures";

/**
 * The projection runner parses every live batch with the same three statements on its one session. Given a
 * batch's positions on a log of some thousands of events, PostgreSQL judged a plan for them cheaper than the
 * generic one every time, and planned each parse again.
 */
describe("a live batch's parse on a long log", () => {
  let database: TestDatabase;
  let pool: pg.Pool;
  let store: PostgresEventStore;
  const account = { kind: "user", id: "kim" } as const;

  beforeAll(async () => {
    database = await createTestDatabase("parsed_batch_plans");
    pool = createPool({ url: database.url, connectionsMax: 4, applicationName: "test" });
    await migrate(pool, ledgerSchema.objects);
    store = await PostgresEventStore.open({
      pool,
      listenConnectionString: database.url,
      pollIntervalMs: 200,
    });
    for (let batch = 0; batch < 30; batch++) {
      await store.appendBatch(
        Array.from({ length: 500 }, (_, index) => [
          {
            streamId: `account-user-seed-${batch}-${index}`,
            expectedVersion: "any" as const,
            events: [topUp("kim", "1", `s${batch}-${index}`)],
          },
          usageCharge(account, `req_seed_${batch}_${index}`, "2026-11-20T02:00:00.000Z", "1"),
        ]).flat(),
      );
    }
    await pool.query("ANALYZE ledger_events");
  }, 120_000);

  afterAll(async () => {
    await store.close();
    await pool.end();
    await database.drop();
  });

  it("keeps each parse on its generic plan, though a plan for the batch's positions would look cheaper", async () => {
    const client = await pool.connect();
    const seqScans: number[] = [];
    try {
      // Given batches of one top-up and one charge, each parsed as the runner parses the log's last events
      for (let batch = 0; batch < 20; batch++) {
        const after = await lastPosition(client);
        await store.appendBatch([
          {
            streamId: `account-user-late-${batch}`,
            expectedVersion: "any",
            events: [topUp("kim", "1", `l${batch}`)],
          },
          usageCharge(account, `req_late_${batch}`, "2026-11-20T02:00:00.000Z", "1"),
        ]);
        const upTo = await lastPosition(client);
        await client.query("BEGIN");
        const parsed = await parseBatch(client, { after, upTo }, ["CreditToppedUp", "UsageCharged"], false);
        // This transaction's sequential scans of the log, none: each plan reads the batch's range of its index.
        const scans = await client.query<{ seq_scans: string }>(
          "SELECT pg_stat_get_xact_numscans('ledger_events'::regclass) AS seq_scans",
        );
        await client.query("COMMIT");
        expect(parsed).toBe(2);
        seqScans.push(Number(scans.rows[0]!.seq_scans));
      }
      expect(seqScans).toEqual(Array.from({ length: 20 }, () => 0));
      // Then after the plan cache's first five custom plans, every parse ran on the generic plan
      const plans = await client.query<{ name: string; custom_plans: string }>(
        "SELECT name, custom_plans FROM pg_prepared_statements WHERE name LIKE 'parse-batch-%' ORDER BY name",
      );
      expect(plans.rows.map((row) => [row.name, Number(row.custom_plans)])).toEqual([
        ["parse-batch-parsed_other_events", 5],
        ["parse-batch-parsed_usage_charged", 5],
      ]);
    } finally {
      client.release();
    }
  });
});

async function lastPosition(client: pg.PoolClient): Promise<LogPosition> {
  const last = await client.query<{ commit: string; prepare: string }>(
    `SELECT transaction_order::text AS commit, position::text AS prepare FROM ledger_events
     ORDER BY transaction_order DESC, position DESC LIMIT 1`,
  );
  return { commit: BigInt(last.rows[0]!.commit), prepare: BigInt(last.rows[0]!.prepare) };
}
