import { describe, expect, it } from "vitest";
import { expectedVersionOf, readUsageStream } from "../../src/billing/charging/usage-stream-state";
import { topUpCredit } from "../../src/billing/commands/top-up-credit";
import { LedgerUnavailableError } from "../../src/billing/holds/hold-refusal";
import { lateSettlementOf } from "../../src/billing/holds/late-settlement";
import { PostgresUsageAuthorizations } from "../../src/billing/holds/postgres-usage-authorizations";
import type { UsageAuthorizationRequest } from "../../src/billing/holds/usage-authorizations";
import {
  assertContiguousVersions,
  assertHoldWithinFunds,
  assertRefusedForFunds,
  assertReleasesItsHold,
  assertWonNotNegative,
} from "../../src/billing/money-invariants";
import { createPricingReadModel } from "../../src/billing/read-models/pricing-read-model";
import { AssertionError } from "../../src/kernel/assert";
import { Money } from "../../src/kernel/money";
import type { EventData, LedgerEvent } from "../../src/ledger/events";
import type { RecordedEvent } from "../../src/ledger/store/event-store";
import { generationHoldsWithFakes } from "../support/generation-holds-with-fakes";
import { dollarPerMillionPricing, holdRequestOf } from "../support/hold-fixtures";

/**
 * The invariants money rests on (src/billing/money-invariants.ts) stop the work when they break: each is
 * shown firing on a violated invariant, on its own and where the code checks it — the holds' SQL answer,
 * the hold a gateway remembers, a late settlement, a charge's expected version, a top-up, the pricing query.
 */

const requestId = "req_invariant";
const keyId = "6f1c2a4e-8d3b-4f5a-9c7e-1b2d3e4f5a6b";
const account = { kind: "user" as const, id: "invariant" };
const startedAt = "2026-03-02T01:00:00.000Z";
const metadata = { actor: `key:${keyId}`, occurredAt: startedAt };

function recorded(
  streamVersion: number,
  event: Pick<LedgerEvent, "type" | "data">,
  eventId = `00000000-0000-4000-8000-00000000000${streamVersion}`,
): RecordedEvent {
  return {
    ...event,
    metadata,
    eventId,
    streamId: `usage-${requestId}`,
    streamVersion,
    position: { commit: BigInt(streamVersion + 1), prepare: BigInt(streamVersion + 1) },
    recordedAt: new Date(startedAt),
  } as RecordedEvent;
}

const authorizationData = {
  requestId,
  keyId,
  account,
  userId: account.id,
  organizationId: null,
  model: "alpha-5.4-mini",
  endpoint: "chat.completions" as const,
  streamed: true,
  startedAt,
  estimate: { inputTokensMax: 4_000, outputTokensMax: 1_024, estimatedWon: "5" },
  gatewayInstance: "gateway-test",
  expiresAt: "2026-03-02T01:11:00.000Z",
};

const usageData: EventData<"UsageRecorded"> = {
  requestId,
  keyId,
  account,
  userId: account.id,
  organizationId: null,
  model: "alpha-5.4-mini",
  endpoint: "chat.completions",
  streamed: true,
  outcome: "completed",
  tokens: { input: 100, cached: null, output: 10, reasoning: null },
  usageSource: "upstream",
  startedAt,
  heldWon: "5",
  pendingWon: "0.5",
};

const hold = recorded(0, { type: "UsageAuthorized", data: { ...authorizationData, holdWon: "5" } });
const estimate = recorded(1, {
  type: "UsageRecorded",
  data: { ...usageData, outcome: "interrupted", usageSource: "estimated", pendingWon: "0.4" },
});

describe("money invariants, on their own", () => {
  it("given a hold within its funds and its estimate, then it passes; above either, or from under ₩1, it fires", () => {
    assertHoldWithinFunds({ holdWon: "5", availableWon: "5", estimatedWon: "5" }, requestId);
    assertHoldWithinFunds({ holdWon: "3.5", availableWon: "3.5", estimatedWon: "5" }, requestId);

    expect(() =>
      assertHoldWithinFunds({ holdWon: "5.000001", availableWon: "5", estimatedWon: "9" }, requestId),
    ).toThrow(/above the funds it was taken against/);
    expect(() =>
      assertHoldWithinFunds({ holdWon: "6", availableWon: "9", estimatedWon: "5" }, requestId),
    ).toThrow(/above its estimate/);
    expect(() =>
      assertHoldWithinFunds({ holdWon: "-1", availableWon: "9", estimatedWon: "5" }, requestId),
    ).toThrow(AssertionError);
    expect(() =>
      assertHoldWithinFunds({ holdWon: "0.5", availableWon: "0.5", estimatedWon: "5" }, requestId),
    ).toThrow(/less than ₩1 available/);
  });

  it("given a refusal for funds with ₩1 or more available, then it fires", () => {
    assertRefusedForFunds("0.999999", requestId);
    assertRefusedForFunds("-20", requestId);
    expect(() => assertRefusedForFunds("1", requestId)).toThrow(/refused for funds with 1 available/);
  });

  it("given a settlement releasing other than its hold, then it fires (more would free money never held)", () => {
    assertReleasesItsHold("5.000000", "5", "the usage");
    expect(() => assertReleasesItsHold("5.01", "5", "the usage")).toThrow(/releases 5.01, not its hold of 5/);
    expect(() => assertReleasesItsHold("4", "5", "the void")).toThrow(AssertionError);
  });

  it("given a negative amount where none can be, then it fires; zero passes", () => {
    assertWonNotNegative("0", "the charge");
    expect(() => assertWonNotNegative("-0.000001", "the charge")).toThrow(/the charge must not be negative/);
    expect(() => assertWonNotNegative(new Money(-3), "the hold")).toThrow(AssertionError);
  });

  it("given a stream whose versions skip one, then it fires", () => {
    assertContiguousVersions([hold, estimate], "usage-x");
    expect(() => assertContiguousVersions([hold, { ...estimate, streamVersion: 2 }], "usage-x")).toThrow(
      /holds version 2 at position 1/,
    );
  });
});

describe("money invariants, where the code checks them", () => {
  function authorizationsAnswering(rows: Record<string, unknown>[]) {
    const pool = { query: async () => ({ rows }) } as never;
    return new PostgresUsageAuthorizations(pool);
  }
  const holdRequest: UsageAuthorizationRequest = {
    eventId: "00000000-0000-4000-8000-0000000000aa",
    data: authorizationData,
  };
  const heldRow = {
    ordinal: 0,
    hold_won: "5",
    available_won: "5",
    refusal: null,
    limit_value: null,
  };

  it("given ledger_authorize_usage answering a hold above what was available, then the answer is refused as a broken invariant", async () => {
    await expect(
      authorizationsAnswering([heldRow]).authorizeUsage([holdRequest], { waitForFlush: true }),
    ).resolves.toMatchObject([{ kind: "held", holdWon: "5" }]);
    await expect(
      authorizationsAnswering([{ ...heldRow, available_won: "4" }]).authorizeUsage([holdRequest], {
        waitForFlush: true,
      }),
    ).rejects.toThrow(/above the funds it was taken against/);
  });

  it("given ledger_authorize_usage answering fewer rows than requests, or a refusal for funds with room, then it fires", async () => {
    await expect(
      authorizationsAnswering([heldRow]).authorizeUsage([holdRequest, holdRequest], { waitForFlush: true }),
    ).rejects.toThrow(/answered 1 rows out of order for 2 requests/);
    await expect(
      authorizationsAnswering([
        { ...heldRow, hold_won: null, available_won: "3", refusal: "funds" },
      ]).authorizeUsage([holdRequest], { waitForFlush: true }),
    ).rejects.toThrow(/refused for funds with 3 available/);
  });

  it("given a hold decided above its funds, then the gateway reports a broken invariant, not a ledger outage", async () => {
    const pricing = dollarPerMillionPricing;
    const holds = generationHoldsWithFakes({
      // Granted ₩5 with ₩2 available: what a broken statement would answer.
      authorizer: {
        isSetApart: () => false,
        authorize: async () => ({
          kind: "held",
          holdWon: "5",
          availableWon: "2",
        }),
      },
      pricing: { pricingAt: async () => [pricing], pricingEachAt: async () => [pricing] },
      availableWon: "2",
    });
    const request = holdRequestOf(requestId, {
      availableWon: "2",
      streamed: true,
      maxOutputTokens: 1_000_000,
    });

    const placed = holds.begin(request).placed;

    await expect(placed).rejects.toThrow(AssertionError);
    await expect(placed).rejects.not.toThrow(LedgerUnavailableError);
  });

  it("given the gateway's late settlement releasing other than the stored hold, then it fires instead of writing a correction", () => {
    const fits = lateSettlementOf([hold, estimate], { type: "UsageRecorded", data: usageData }, metadata);
    expect(fits).toMatchObject({ kind: "append", append: { expectedVersion: 1 } });

    expect(() =>
      lateSettlementOf(
        [hold, estimate],
        { type: "UsageRecorded", data: { ...usageData, heldWon: "7" } },
        metadata,
      ),
    ).toThrow(/the settlement of usage-req_invariant releases 7, not its hold of 5/);
    expect(() =>
      lateSettlementOf(
        [hold, estimate],
        { type: "UsageVoided", data: { requestId, account, releasedWon: "4", reason: "upstream-failed" } },
        metadata,
      ),
    ).toThrow(AssertionError);
    const estimateReleasingLess = recorded(1, {
      type: "UsageRecorded",
      data: { ...estimate.data, heldWon: "1" } as never,
    });
    expect(() =>
      lateSettlementOf([hold, estimateReleasingLess], { type: "UsageRecorded", data: usageData }, metadata),
    ).toThrow(/the estimate of usage-req_invariant releases 1/);
  });

  it("given a usage stream with a gap in its versions, or a state whose version is past its last usage or charge, then the charge's expected version fires", () => {
    const reading = readUsageStream([hold, recorded(1, { type: "UsageRecorded", data: usageData })]);
    expect(reading.kind).toBe("state");
    if (reading.kind !== "state") return;
    expect(expectedVersionOf(reading.state)).toBe(1);

    expect(() => expectedVersionOf({ ...reading.state, version: 2 })).toThrow(
      /is at version 2, but its last usage or charge is at 1/,
    );
    expect(() => readUsageStream([hold, recorded(2, { type: "UsageRecorded", data: usageData })])).toThrow(
      /holds version 2 at position 1/,
    );
  });

  it("given a top-up of nothing or less, then it fires before anything is appended", async () => {
    let appended = 0;
    const dependencies = {
      store: { append: async () => void appended++ },
      database: { query: async () => ({ rows: [] }) },
    } as never;
    for (const amountWon of [new Money(0), new Money(-5)])
      await expect(
        topUpCredit(dependencies, { account, amountWon, reference: "test" }, { actor: "admin" }),
      ).rejects.toThrow(AssertionError);
    expect(appended).toBe(0);
  });

  it("given the pricing query answering rows out of order, then it fires rather than price one request at another's prices", async () => {
    const rows = [{ ordinal: 1 }, { ordinal: 0 }];
    const pricing = createPricingReadModel({ query: async () => ({ rows }) } as never);
    const at = (model: string) => ({ model, organizationId: null, startedAt: new Date(startedAt) });
    await expect(pricing.pricingEachAt([at("alpha-5.4-mini"), at("beta-2")])).rejects.toThrow(
      /answered 2 rows out of order for 2 requests/,
    );
  });
});
