import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresUsageAuthorizations } from "../../../src/billing/holds/postgres-usage-authorizations";
import type { ApiKeyLimits } from "../../../src/ledger/events";
import { keyLimitsSet, metadata, topUp } from "../../support/ledger-fixtures";
import { type LedgerHarness, openLedgerHarness } from "../../support/ledger-harness";
import { personalHoldRequest, usageAuthorizationsOf } from "../../support/usage-authorizations";

/**
 * One call of `ledger_authorize_usage` decides a group commit's holds in order, each against what the
 * snapshot shows plus what the batch granted before it. A request the batch refuses (by its key's limits or
 * for funds) holds nothing, so it must take nothing from the requests after it: neither the account's room
 * nor its key's rate or spend. A hold its account cut to the room left still counts whole for its key, in one
 * batch as across two. A key deactivated, deleted or no longer allowed the model since its gateway read it
 * is refused first, and takes nothing either.
 */

let accounts = 0;

describe("the holds of one batch", () => {
  let harness: LedgerHarness;

  /** A personal account topped up with `amountWon`, and a key of it with `limits`. */
  async function accountWith(amountWon: string, limits: Partial<ApiKeyLimits> = {}) {
    accounts += 1;
    const userId = `batch-${accounts}`;
    const limitedKey = randomUUID();
    await harness.append(
      {
        streamId: `account-user-${userId}`,
        expectedVersion: "no-stream",
        events: [topUp(userId, amountWon, "t")],
      },
      keyLimitsSet(limitedKey, { kind: "user", id: userId }, limits, metadata({ actor: `user:${userId}` })),
    );
    return { userId, limitedKey };
  }

  const request = (userId: string, keyId: string, estimatedWon: string) =>
    personalHoldRequest(`req_batch_${randomUUID()}`, userId, {
      keyId,
      estimate: { inputTokensMax: 100, outputTokensMax: 100, estimatedWon },
    });
  const authorize = (...requests: ReturnType<typeof request>[]) =>
    usageAuthorizationsOf(harness.ledger.pool, harness.store).authorizeUsage(requests);

  beforeAll(async () => {
    harness = await openLedgerHarness("batch_hold_decisions");
  }, 60_000);
  afterAll(async () => {
    await harness?.dispose();
  });

  it("given keys deactivated, deleted or no longer allowed the model since their gateway read them, then each is refused and takes nothing", async () => {
    const { userId, limitedKey: restrictedKey } = await accountWith("50", { allowedModels: ["beta"] });
    const [deactivatedKey, deletedKey, activeKey] = [randomUUID(), randomUUID(), randomUUID()];
    // The active keys as the projection leaves them: one deactivated, one active, and each restricted one
    // active; the deleted key has no row.
    const keyRows = [
      [deactivatedKey, 0],
      [restrictedKey, 1],
      [activeKey, 1],
    ] as const;
    for (const [keyId, status] of keyRows)
      await harness.ledger.pool.query(
        `INSERT INTO projection_active_keys (key_id, key_hash, owner_kind, owner_id, issued_by_user_id, status)
         VALUES ($1, $2, 'user', $3, $3, $4)`,
        [keyId, `test-key-${keyId}`, userId, status],
      );
    try {
      const decisions = await new PostgresUsageAuthorizations(harness.ledger.pool).authorizeUsage([
        request(userId, deactivatedKey, "30"),
        request(userId, deletedKey, "30"),
        // alpha-5.4-mini, which a key allowed only beta may no longer call.
        request(userId, restrictedKey, "30"),
        request(userId, activeKey, "40"),
      ]);

      expect(decisions).toEqual([
        { kind: "refused", reason: "key-inactive", availableWon: "50" },
        { kind: "refused", reason: "key-inactive", availableWon: "50" },
        { kind: "refused", reason: "model-not-allowed", availableWon: "50" },
        { kind: "held", holdWon: "40", availableWon: "50" },
      ]);
    } finally {
      await harness.ledger.pool.query("DELETE FROM projection_active_keys WHERE key_id = ANY($1::text[])", [
        keyRows.map(([keyId]) => keyId),
      ]);
    }
  });

  it("given a key refused by its rate limit, then another key of the account is held with the room it left", async () => {
    const { userId, limitedKey } = await accountWith("50", { rateLimitRequestsPerMinute: 1 });
    const otherKey = randomUUID();

    const decisions = await authorize(
      request(userId, limitedKey, "30"),
      request(userId, limitedKey, "30"),
      request(userId, otherKey, "30"),
      request(userId, otherKey, "5"),
    );

    expect(decisions).toEqual([
      { kind: "held", holdWon: "30", availableWon: "50" },
      { kind: "refused", reason: "rate", limit: "1", availableWon: "20" },
      // ₩20 left after the first: the refused second holds nothing, so the third is held, cut to the room.
      { kind: "held", holdWon: "20", availableWon: "20" },
      // The cut hold may still cost its whole ₩30 estimate (C10), so nothing is left for the fourth.
      { kind: "refused", reason: "funds", availableWon: "-10" },
    ]);
    const held = await harness.ledger.pool.query<{ held: string }>(
      "SELECT trim_scale(sum(hold_won))::text AS held FROM request_holds WHERE account_id = $1",
      [userId],
    );
    expect(held.rows).toEqual([{ held: "50" }]);
  });

  it("given a key refused by its monthly limit, then its refused requests do not count toward its rate", async () => {
    const { userId, limitedKey } = await accountWith("1000", {
      monthlySpendLimitWon: "10",
      rateLimitRequestsPerMinute: 2,
    });

    const decisions = await authorize(
      request(userId, limitedKey, "10"),
      request(userId, limitedKey, "1"),
      request(userId, limitedKey, "1"),
      request(userId, limitedKey, "1"),
    );

    // One request granted this minute, under the rate of 2: every refusal after it is the monthly limit's.
    expect(decisions.map((decision) => (decision.kind === "held" ? "held" : decision.reason))).toEqual([
      "held",
      "monthly-spend",
      "monthly-spend",
      "monthly-spend",
    ]);
  });

  it.each([
    ["monthly", { monthlySpendLimitWon: "5" }, "monthly-spend"],
    ["total", { totalSpendLimitWon: "5" }, "total-spend"],
  ] as const)(
    "given a key's hold cut by its account, then the key's %s limit counts it at its estimate, in one batch or across two",
    async (_limit, limits, refusal) => {
      // ₩2 on the account, ₩5 on the key: the first request's ₩30 estimate is held cut to ₩2.
      const apart = await accountWith("2", limits);
      const [first] = await authorize(request(apart.userId, apart.limitedKey, "30"));
      expect(first).toMatchObject({ kind: "held", holdWon: "2" });
      // Then a top-up: the account has room again, the key none (its ₩30 may be spent), as in one batch.
      await harness.append({
        streamId: `account-user-${apart.userId}`,
        expectedVersion: "any",
        events: [topUp(apart.userId, "100", "more")],
      });
      const [second] = await authorize(request(apart.userId, apart.limitedKey, "1"));
      expect(second).toMatchObject({ kind: "refused", reason: refusal, limit: "5" });
      const spend = await harness.ledger.pool.query<{ held: string }>(
        "SELECT trim_scale(held_won)::text AS held FROM key_spend WHERE key_id = $1",
        [apart.limitedKey],
      );
      expect(spend.rows).toEqual([{ held: "30" }]);

      const together = await accountWith("2", limits);
      const decisions = await authorize(
        request(together.userId, together.limitedKey, "30"),
        request(together.userId, together.limitedKey, "1"),
      );
      expect(
        decisions.map((decision) => (decision.kind === "held" ? decision.holdWon : decision.reason)),
      ).toEqual(["2", refusal]);
    },
  );
});
