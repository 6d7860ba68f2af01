import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { UsageAuthorizationDecision } from "../../../src/billing/holds/usage-authorizations";
import { topUp } from "../../support/ledger-fixtures";
import { type LedgerHarness, openLedgerHarness } from "../../support/ledger-harness";
import { personalHoldRequest, usageAuthorizationsOf } from "../../support/usage-authorizations";

/**
 * C10's overdraft bound when holds are cut to the room left: each such hold may cost its whole estimate, so
 * two of them open at once could together overdraw the account by more than one request. Settlements that
 * each free a little room (a request costing a little less than its hold) used to let one short hold after
 * another in; the statement now counts what an open short hold does not cover, so only one is ever open.
 * The settlements here complete the rows as a usage does (a pending cost), straight in SQL: what is under
 * test is the hold statement's decision.
 */

const account = { kind: "user" as const, id: "short-holds" };
const estimatedWon = "10";

describe("holds cut to the room left", () => {
  let harness: LedgerHarness;

  async function hold(name: string): Promise<UsageAuthorizationDecision> {
    const [decision] = await usageAuthorizationsOf(harness.ledger.pool, harness.store).authorizeUsage([
      personalHoldRequest(name, account.id, {
        estimate: { inputTokensMax: 1_000, outputTokensMax: 1_000, estimatedWon },
      }),
    ]);
    return decision!;
  }

  /** The request's usage recorded at `costWon`: its row completed, its cost pending. */
  async function settle(name: string, costWon: string): Promise<void> {
    const updated = await harness.ledger.pool.query(
      `UPDATE request_holds SET settled_at = now(), pending_won = $2::numeric,
         settlement_event = '{"type":"UsageRecorded"}'::jsonb
       WHERE request_id = $1 AND settled_at IS NULL`,
      [name, costWon],
    );
    expect(updated.rowCount).toBe(1);
  }

  beforeAll(async () => {
    harness = await openLedgerHarness("short_holds");
    await harness.append({
      streamId: `account-user-${account.id}`,
      expectedVersion: "no-stream",
      events: [topUp(account.id, "20", "two estimates")],
    });
  }, 60_000);
  afterAll(async () => {
    await harness?.dispose();
  });

  it("given settlements that each free a little room, then one short hold at a time: the account can end no lower than minus one request's cost", async () => {
    // ₩20 and two requests held whole (₩10 each): nothing left.
    expect(await hold("a")).toMatchObject({ kind: "held", holdWon: "10" });
    expect(await hold("b")).toMatchObject({ kind: "held", holdWon: "10" });
    // A costs ₩8: ₩2 of room, and C is held short (₩2 of its ₩10 estimate).
    await settle("a", "8");
    expect(await hold("c")).toMatchObject({ kind: "held", holdWon: "2" });
    // B costs ₩8: ₩2 more room, but C may still cost its whole ₩10, which its hold covers ₩8 short of:
    // D is refused, where it used to be held short too and both could overdraw.
    await settle("b", "8");
    const d = await hold("d");
    expect(d).toMatchObject({ kind: "refused", reason: "funds" });
    // C costs its whole estimate: ₩20 − 8 − 8 − 10 = −₩6, within one request's cost (₩10).
    await settle("c", "10");
    const funds = await harness.ledger.pool.query<{ available: string }>(
      "SELECT (balance_won - pending_won - held_won)::text AS available FROM account_funds WHERE account_id = $1",
      [account.id],
    );
    expect(Number(funds.rows[0]!.available)).toBeGreaterThanOrEqual(-Number(estimatedWon));
    expect(Number(funds.rows[0]!.available)).toBe(-6);
  });

  it("given room for a whole request again, then it is held whole, beside nothing short", async () => {
    await harness.append({
      streamId: `account-user-${account.id}`,
      expectedVersion: "any",
      events: [topUp(account.id, "26", "room again")],
    });
    // ₩46 − ₩26 pending = ₩20: two whole holds, and no short one is open, so nothing is held back.
    expect(await hold("e")).toMatchObject({ kind: "held", holdWon: "10" });
    expect(await hold("f")).toMatchObject({ kind: "held", holdWon: "10" });
    expect(await hold("g")).toMatchObject({ kind: "refused", reason: "funds" });
  });
});
