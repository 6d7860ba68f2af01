import { randomUUID } from "node:crypto";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { PostgresUsageAuthorizations } from "../../../src/billing/holds/postgres-usage-authorizations";
import type { UsageAuthorizationDecision } from "../../../src/billing/holds/usage-authorizations";
import { Money } from "../../../src/kernel/money";
import type { ApiKeyLimits } from "../../../src/ledger/events";
import type { StreamAppend } from "../../../src/ledger/store/event-store";
import { keyLimitsSet, topUp } from "../../support/ledger-fixtures";
import { type LedgerHarness, openLedgerHarness } from "../../support/ledger-harness";
import { personalHoldRequest, withKeysActive } from "../../support/usage-authorizations";

/**
 * `ledger_authorize_usage` decides a batch as if each request had a statement of its own, in order. Checked
 * against that sequential rule written out here, on random batches over two small accounts whose keys have
 * every kind of limit, so that refusals of every kind interleave. Each batch is rolled back: every one starts
 * from the same funds, with nothing held or spent.
 */

const accounts = { roomy: "25", tight: "3.5" } as const;
type AccountName = keyof typeof accounts;

const keys = {
  rated: { account: "roomy", limits: { rateLimitRequestsPerMinute: 2 } },
  monthly: { account: "roomy", limits: { monthlySpendLimitWon: "10" } },
  unlimited: { account: "roomy", limits: {} },
  total: { account: "tight", limits: { totalSpendLimitWon: "2.5" } },
  tightUnlimited: { account: "tight", limits: {} },
} as const satisfies Record<string, { account: AccountName; limits: Partial<ApiKeyLimits> }>;
type KeyName = keyof typeof keys;
const keyNames = Object.keys(keys) as KeyName[];

interface AskedHold {
  key: KeyName;
  estimatedWon: string;
}

/** The rule, one request after another: what each earlier grant took, and nothing for a refusal. */
function decideInTurn(batch: readonly AskedHold[]): UsageAuthorizationDecision[] {
  const grantedWon = new Map<string, Money>();
  const grantedRequests = new Map<KeyName, number>();
  const granted = (name: string) => grantedWon.get(name) ?? new Money(0);
  return batch.map(({ key, estimatedWon }) => {
    const { account, limits } = keys[key];
    const limit: {
      rateLimitRequestsPerMinute?: number;
      monthlySpendLimitWon?: string;
      totalSpendLimitWon?: string;
    } = limits;
    const available = new Money(accounts[account]).minus(granted(`account ${account}`));
    const spent = granted(`key ${key}`);
    const refusal =
      limit.rateLimitRequestsPerMinute !== undefined &&
      (grantedRequests.get(key) ?? 0) >= limit.rateLimitRequestsPerMinute
        ? { reason: "rate" as const, limit: String(limit.rateLimitRequestsPerMinute) }
        : limit.monthlySpendLimitWon !== undefined && spent.gte(limit.monthlySpendLimitWon)
          ? { reason: "monthly-spend" as const, limit: limit.monthlySpendLimitWon }
          : limit.totalSpendLimitWon !== undefined && spent.gte(limit.totalSpendLimitWon)
            ? { reason: "total-spend" as const, limit: limit.totalSpendLimitWon }
            : available.lt(1)
              ? { reason: "funds" as const }
              : undefined;
    if (refusal !== undefined) return { kind: "refused", ...refusal, availableWon: available.toFixed() };
    grantedWon.set(`account ${account}`, granted(`account ${account}`).plus(estimatedWon));
    grantedWon.set(`key ${key}`, spent.plus(estimatedWon));
    grantedRequests.set(key, (grantedRequests.get(key) ?? 0) + 1);
    const hold = Money.min(estimatedWon, available).toDecimalPlaces(6, Money.ROUND_DOWN);
    return { kind: "held", holdWon: hold.toFixed(), availableWon: available.toFixed() };
  }) as UsageAuthorizationDecision[];
}

/** Money in one form on both sides (the statement's numeric text may carry trailing zeros). */
function canonical(decision: UsageAuthorizationDecision): UsageAuthorizationDecision {
  const availableWon = new Money(decision.availableWon).toFixed();
  if (decision.kind === "held")
    return { ...decision, holdWon: new Money(decision.holdWon).toFixed(), availableWon };
  if (!("limit" in decision)) return { ...decision, availableWon };
  return { ...decision, limit: new Money(decision.limit).toFixed(), availableWon };
}

describe("the holds of one batch, against the rule decided in turn", () => {
  let harness: LedgerHarness;
  const keyIds = Object.fromEntries(keyNames.map((name) => [name, randomUUID()])) as Record<KeyName, string>;
  const userIdOf = (account: AccountName) => `batch-property-${account}`;

  beforeAll(async () => {
    harness = await openLedgerHarness("batch_hold_property");
    const appends: StreamAppend[] = [
      ...(Object.keys(accounts) as AccountName[]).map((account) => ({
        streamId: `account-user-${userIdOf(account)}`,
        expectedVersion: "no-stream" as const,
        events: [topUp(userIdOf(account), accounts[account], "t")],
      })),
      ...keyNames.map((name) =>
        keyLimitsSet(keyIds[name], { kind: "user", id: userIdOf(keys[name].account) }, keys[name].limits),
      ),
    ];
    await harness.append(...appends);
  }, 60_000);
  afterAll(async () => {
    await harness?.dispose();
  });

  it("given random batches of every key and limit, then each request is decided as if alone, in order", async () => {
    const client = await harness.ledger.pool.connect();
    const authorizations = new PostgresUsageAuthorizations(client);
    const estimate = fc.oneof(
      fc.integer({ min: 1, max: 15 }).map(String),
      fc.integer({ min: 1, max: 15_000_000 }).map((microWon) => new Money(microWon).div(1_000_000).toFixed()),
    );
    try {
      await fc.assert(
        fc.asyncProperty(
          fc.array(fc.record({ key: fc.constantFrom(...keyNames), estimatedWon: estimate }), {
            minLength: 1,
            maxLength: 12,
          }),
          async (batch) => {
            await client.query("BEGIN");
            try {
              const requests = batch.map(({ key, estimatedWon }) =>
                personalHoldRequest(`req_property_${randomUUID()}`, userIdOf(keys[key].account), {
                  keyId: keyIds[key],
                  estimate: { inputTokensMax: 100, outputTokensMax: 100, estimatedWon },
                }),
              );
              const decided = await withKeysActive(client, requests, () =>
                authorizations.authorizeUsage(requests),
              );
              expect(decided.map(canonical)).toEqual(decideInTurn(batch).map(canonical));
            } finally {
              await client.query("ROLLBACK");
            }
          },
        ),
        { numRuns: 300 },
      );
    } finally {
      client.release();
    }
  }, 120_000);
});
