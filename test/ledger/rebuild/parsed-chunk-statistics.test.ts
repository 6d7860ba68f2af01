import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseChunk } from "../../../src/ledger/rebuild/parsed-events";
import { topUp, usageCharge } from "../../support/ledger-fixtures";
import { type LedgerHarness, openLedgerHarness } from "../../support/ledger-harness";

/**
 * A rebuild's chunk tables are made by CREATE TABLE AS, which leaves them without statistics; the planner
 * sizes the folds that read them from what `parseChunk` gives it.
 */
describe("a rebuild's parsed chunk", () => {
  let harness: LedgerHarness;

  beforeAll(async () => {
    harness = await openLedgerHarness("parsed_chunk_statistics");
    const account = { kind: "user", id: "kim" } as const;
    for (let index = 0; index < 3; index++) {
      await harness.append({
        streamId: "account-user-kim",
        expectedVersion: "any",
        events: [topUp("kim", "10", `t${index}`)],
      });
    }
    for (let index = 0; index < 5; index++) {
      await harness.append(usageCharge(account, `req_${index}`, "2026-11-20T02:00:00.000Z", "1.5"));
    }
    await harness.visible();
  });

  afterAll(() => harness.dispose());

  it("given a chunk of the log, then each parsed table is analyzed: the planner knows its rows, and the sampling setting is as it was", async () => {
    // given
    const client = await harness.ledger.pool.connect();
    try {
      await client.query("BEGIN");
      const before = await client.query<{ target: string }>(
        "SELECT current_setting('default_statistics_target') AS target",
      );
      const bounds = await client.query<{ after: string; up_to: string }>(
        "SELECT (min(transaction_order) - 1)::text AS after, max(transaction_order)::text AS up_to FROM ledger_events",
      );
      // when
      const parsed = await parseChunk(client, {
        afterOrder: BigInt(bounds.rows[0]!.after),
        upToOrder: BigInt(bounds.rows[0]!.up_to),
      });
      // then
      expect(parsed).toBe(8);
      // What the planner reads of each table (reltuples; -1 when never analyzed) beside the rows it holds.
      const known: Record<string, { estimated: number; held: number }> = {};
      for (const table of ["parsed_other_events", "parsed_usage_charged", "parsed_usage_recorded"]) {
        const estimated = await client.query<{ reltuples: number }>(
          "SELECT reltuples FROM pg_class WHERE oid = $1::regclass",
          [table],
        );
        const held = await client.query<{ count: number }>(`SELECT count(*)::int AS count FROM ${table}`);
        known[table] = { estimated: estimated.rows[0]!.reltuples, held: held.rows[0]!.count };
      }
      expect(known).toEqual({
        parsed_other_events: { estimated: 3, held: 3 },
        parsed_usage_charged: { estimated: 5, held: 5 },
        parsed_usage_recorded: { estimated: 0, held: 0 },
      });
      const after = await client.query<{ target: string }>(
        "SELECT current_setting('default_statistics_target') AS target",
      );
      expect(after.rows[0]!.target).toBe(before.rows[0]!.target);
    } finally {
      await client.query("ROLLBACK");
      client.release();
    }
  });
});
