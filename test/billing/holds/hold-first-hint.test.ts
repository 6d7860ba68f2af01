import { describe, expect, it } from "vitest";
import { generationHoldsWithFakes } from "../../support/generation-holds-with-fakes";
import { dollarPerMillionPricing, holdRequestOf } from "../../support/hold-fixtures";

/**
 * Whether a request's hold comes before its upstream call: a process judges from what its account had after
 * its last hold here, less what its holds in flight ask. A request near its account's limit holds first, so
 * that one its hold refuses reaches no upstream; one with room goes upstream alongside its hold.
 */

/** A statement that grants every hold ₩7 from ₩1,000, as long as the test asks. */
function holdsOnRoomyAccount() {
  return generationHoldsWithFakes({
    authorizer: {
      isSetApart: () => false,
      authorize: async () => ({ kind: "held", holdWon: "7", availableWon: "1000" }),
    },
    pricing: {
      pricingAt: async () => [dollarPerMillionPricing],
      pricingEachAt: async () => [dollarPerMillionPricing],
    },
    availableWon: "1000",
  });
}

describe("holding first, as a process judges its account's room", () => {
  it("given a usage that cost far more than its hold, then the account's next request holds first", async () => {
    // Given: an account with room, its pricing in memory, so its requests go upstream alongside their holds
    const holds = holdsOnRoomyAccount();
    const first = holds.begin(holdRequestOf("req_spender"));
    await first.placed;
    const second = holds.begin(holdRequestOf("req_spender"));
    await second.placed;
    expect([first.holdFirst, second.holdFirst]).toEqual([true, false]);

    // When: a usage costs ₩980 against its ₩7 hold (700,000 input tokens at $1 a million, ₩1,400 a dollar)
    await second.post({
      tokens: { input: 700_000, cached: 0, output: 0, reasoning: null },
      usageSource: "upstream",
      outcome: "completed",
    });

    // Then: about ₩20 is left, below ten estimates: the next request holds first
    expect(holds.begin(holdRequestOf("req_spender")).holdFirst).toBe(true);
  });

  it("given a usage that cost less than its hold, then the account's next request still goes alongside", async () => {
    const holds = holdsOnRoomyAccount();
    await holds.begin(holdRequestOf("req_saver")).placed;
    const served = holds.begin(holdRequestOf("req_saver"));
    await served.placed;

    await served.post({
      tokens: { input: 1_000, cached: 0, output: 100, reasoning: null },
      usageSource: "upstream",
      outcome: "completed",
    });

    expect(holds.begin(holdRequestOf("req_saver")).holdFirst).toBe(false);
  });
});
