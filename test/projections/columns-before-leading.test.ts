import { randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { pricesProjection } from "../../projections/prices";
import { advisoryLockKeys } from "../../src/database/advisory-lock-keys";
import { addMissingColumnsAtStart } from "../../src/ledger/projection/projection-columns-at-start";
import { type RunningService, startService } from "../../src/service";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { serviceOptionsOf } from "../support/gateway-harness";
import { metadata } from "../support/ledger-fixtures";
import { openLedgerHarness } from "../support/ledger-harness";
import { eventually } from "../workers/queue-test-support";

/**
 * A release whose projection gained a column (the prices' stream version) may start its workers while an
 * earlier release's still leads: each adds the column to the standing table as it starts, in a moment of its
 * own, so it can charge (and read prices) at once, and no refold holds the table locked while it adds it.
 */

describe("a worker of a release whose projection gained a column", () => {
  let database: TestDatabase | undefined;
  const running: RunningService[] = [];
  const clients: pg.Client[] = [];

  afterAll(async () => {
    for (const service of running) await service.close();
    for (const client of clients) await client.end();
    await database?.drop();
  });

  it("given an earlier release's table and its worker leading, when it starts, then the column is there before it leads", async () => {
    database = await createTestDatabase("columns_before_leading");
    const first = await startService(serviceOptionsOf(database.url));
    await first.ledger.store.append({
      streamId: "model-price-alpha-5.4",
      expectedVersion: "any",
      events: [
        {
          eventId: randomUUID(),
          event: {
            type: "ModelPriceSet",
            data: {
              model: "alpha-5.4",
              inputUsdPerMillionTokens: "2",
              outputUsdPerMillionTokens: "4",
              cachedInputUsdPerMillionTokens: "1",
            },
            metadata: metadata(),
          },
        },
      ],
    });
    await eventually("the price is folded", async () => {
      const folded = await first.ledger.pool
        .query("SELECT 1 FROM projection_model_prices")
        .catch(() => ({ rowCount: 0 }));
      return (folded.rowCount ?? 0) > 0;
    });
    await first.close();

    // The prices as the earlier release left them, its worker leading the projections
    const client = new pg.Client({ connectionString: database.url });
    await client.connect();
    clients.push(client);
    await client.query("ALTER TABLE projection_model_prices DROP COLUMN stream_version");
    await client.query(
      "UPDATE projection_checkpoints SET definition_version = 1 WHERE projection = 'prices'",
    );
    const earlierLeader = new pg.Client({ connectionString: database.url });
    await earlierLeader.connect();
    clients.push(earlierLeader);
    await earlierLeader.query("SELECT pg_advisory_lock($1)", [advisoryLockKeys.projectionRunner]);

    // When this release's worker starts, standing by
    running.push(await startService(serviceOptionsOf(database.url)));

    // Then the column is there while the earlier worker still leads: prices read as this release reads them
    const version = async () =>
      (
        await client.query<{ definition_version: number }>(
          "SELECT definition_version FROM projection_checkpoints WHERE projection = 'prices'",
        )
      ).rows[0]!.definition_version;
    expect(await version()).toBe(1);
    const prices = await client.query(
      "SELECT model FROM projection_model_prices ORDER BY effective_at DESC, stream_version DESC NULLS LAST",
    );
    expect(prices.rowCount).toBeGreaterThan(0);

    // And once it leads, it refolds the table at this release's definition
    await earlierLeader.query("SELECT pg_advisory_unlock($1)", [advisoryLockKeys.projectionRunner]);
    await eventually("this release's worker refolded the prices", async () => (await version()) === 2);
    const unversioned = await client.query(
      "SELECT 1 FROM projection_model_prices WHERE stream_version IS NULL",
    );
    expect(unversioned.rowCount).toBe(0);
  }, 60_000);
  it("given a long transaction holding the table, then the start waits for it without queuing its readers", async () => {
    const harness = await openLedgerHarness("columns_lock_wait");
    const pool = harness.ledger.pool;
    const holder = await pool.connect();
    try {
      await pool.query("ALTER TABLE projection_model_prices DROP COLUMN stream_version");
      // A transaction that read the table and stays open for 3 s (a refold, a rebuild, a slow report)
      await holder.query("BEGIN");
      await holder.query("SELECT count(*) FROM projection_model_prices");
      const released = (async () => {
        await new Promise((resolve) => setTimeout(resolve, 3_000));
        await holder.query("COMMIT");
      })();

      const adding = addMissingColumnsAtStart(pool, pricesProjection.tables, {
        lockWaitMs: 200,
        attemptsMax: 50,
      });
      // Meanwhile the table's readers are served: none waits out the transaction behind the ALTER (3 s).

      const readsMs: number[] = [];
      for (let read = 0; read < 20; read++) {
        const startedMs = performance.now();
        await pool.query("SELECT count(*) FROM projection_model_prices");
        readsMs.push(performance.now() - startedMs);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      await Promise.all([adding, released]);

      expect(Math.max(...readsMs)).toBeLessThan(1_500);
      const columns = await pool.query(
        "SELECT 1 FROM information_schema.columns WHERE table_name = 'projection_model_prices' AND column_name = 'stream_version'",
      );
      expect(columns.rowCount).toBe(1);
    } finally {
      holder.release();
      await harness.dispose();
    }
  }, 60_000);
});
