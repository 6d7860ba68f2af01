import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allProjections } from "../../projections";
import {
  statementChargesTable,
  statementCorrectionsTable,
  statementMonthsTable,
  statementTopUpsTable,
} from "../../projections/monthly-statements";
import type { AccountReference } from "../../src/ledger/events";
import { rebuildProjections } from "../../src/ledger/ledger-maintenance";
import { verifyProjections } from "../../src/ledger/verify-projections";
import { topUpAt } from "../billing/statements/statement-ledger";
import { usageCharge } from "../support/ledger-fixtures";
import { type LedgerHarness, openLedgerHarness } from "../support/ledger-harness";

/**
 * The monthly-statements projection, folded live (by its SQL fold, batch by batch) and rebuilt in SQL in
 * small chunks, over a ledger with charges on either side of Seoul's month boundary and corrections of both
 * signs: the same rows, the sums a statement reads, and what verify's TypeScript fold gives.
 */

const user: AccountReference = { kind: "user", id: "fold-user" };
type ChargeOfUser = Parameters<typeof usageCharge> extends [AccountReference, ...infer Rest] ? Rest : never;
const charge = (...args: ChargeOfUser) => usageCharge(user, ...args);

let harness: LedgerHarness;
const context = () => ({ pool: harness.ledger.pool, store: harness.store, projections: allProjections });

async function rowsOf(table: { name: string }, orderBy: string): Promise<unknown[]> {
  return (await harness.ledger.pool.query(`SELECT * FROM ${table.name} ORDER BY ${orderBy}`)).rows;
}

beforeAll(async () => {
  harness = await openLedgerHarness("monthly_statements_fold");
  const firstOfA = randomUUID();
  const firstOfB = randomUUID();
  await harness.append(
    topUpAt(user, "1000", "september", "2026-09-01T00:00:00.000Z"),
    // 2026-10-01 00:00 KST: October.
    topUpAt(user, "250.25", "october", "2026-09-30T15:00:00.000Z"),
    charge("fold-a", "2026-09-30T14:59:59.999Z", "10.000001", null, firstOfA),
    charge("fold-b", "2026-09-30T15:00:00.000Z", "20.5", null, firstOfB),
    charge("fold-c", "2026-10-20T00:00:00.000Z", "3.333333"),
  );
  // Corrections in later appends (later chunks of the SQL rebuild): one up, one down.
  await harness.append(
    charge("fold-a", "2026-09-30T14:59:59.999Z", "1.5", {
      correctsEventId: firstOfA,
      correctedAmountWon: "10.000001",
      deliveredWon: "11.500001",
    }),
  );
  await harness.append(
    charge("fold-b", "2026-09-30T15:00:00.000Z", "-20.000001", {
      correctsEventId: firstOfB,
      correctedAmountWon: "20.5",
      deliveredWon: "0.499999",
    }),
  );
  await harness.project();
}, 60_000);

afterAll(async () => {
  await harness?.dispose();
});

describe("monthly-statements projection", () => {
  it("sums each month's top-ups, charges and corrections apart, by the request's Seoul month", async () => {
    const months = await harness.ledger.pool.query(
      `SELECT month, top_ups_won::text, charges_won::text, corrections_won::text, charge_count::text
       FROM ${statementMonthsTable.name} WHERE account_id = $1 ORDER BY month`,
      [user.id],
    );
    expect(months.rows).toEqual([
      {
        month: "2026-09",
        top_ups_won: "1000",
        charges_won: "10.000001",
        corrections_won: "1.5",
        charge_count: "1",
      },
      {
        month: "2026-10",
        top_ups_won: "250.25",
        charges_won: "23.833333",
        corrections_won: "-20.000001",
        charge_count: "2",
      },
    ]);
  });

  it("gives the same rows when rebuilt in SQL in small chunks as when folded live", async () => {
    const live = {
      months: await rowsOf(statementMonthsTable, "account_kind, account_id, month"),
      charges: await rowsOf(statementChargesTable, "account_kind, account_id, month, model, key_id"),
      corrections: await rowsOf(statementCorrectionsTable, "corrects_event_id"),
      topUps: await rowsOf(statementTopUpsTable, "event_id"),
    };
    expect(live.topUps).toHaveLength(2);
    expect(live.corrections).toHaveLength(2);

    const rebuilt = await rebuildProjections(context(), { fold: "sql", batchSizeMax: 2, chunkEventsMax: 2 });

    expect(rebuilt.fold).toBe("sql");
    expect(await rowsOf(statementMonthsTable, "account_kind, account_id, month")).toEqual(live.months);
    expect(await rowsOf(statementChargesTable, "account_kind, account_id, month, model, key_id")).toEqual(
      live.charges,
    );
    expect(await rowsOf(statementCorrectionsTable, "corrects_event_id")).toEqual(live.corrections);
    expect(await rowsOf(statementTopUpsTable, "event_id")).toEqual(live.topUps);
    expect(await verifyProjections(context())).toEqual([]);
  });
});
