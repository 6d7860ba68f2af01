import { describe, expect, it } from "vitest";
import { LedgerUnavailableError } from "../../../src/billing/holds/hold-refusal";
import type { RowCompletion } from "../../../src/billing/holds/hold-row-completion";
import type { UsageAuthorizationDecision } from "../../../src/billing/holds/usage-authorizations";
import { generationHoldsWithFakes } from "../../support/generation-holds-with-fakes";
import { dollarPerMillionPricing, holdRequestOf } from "../../support/hold-fixtures";

/**
 * A hold whose statement the database takes and does not answer (frozen, or cut off without a reset): the
 * request is refused as the ledger being away once its wait is over, and if the statement places the hold
 * after all, that hold is released whole — the request it was for was never served.
 */

const request = holdRequestOf("req_unanswered");
const pricing = dollarPerMillionPricing;

/** Holds whose statement answers only when the test says, as `answer` gives (once the statement is asked). */
function holdsAnsweredLater() {
  let asked: (respond: (decision: UsageAuthorizationDecision) => void) => void = () => {};
  const statement = new Promise<(decision: UsageAuthorizationDecision) => void>(
    (resolve) => (asked = resolve),
  );
  const completions: RowCompletion[] = [];
  const holds = generationHoldsWithFakes({
    authorizer: {
      isSetApart: () => false,
      authorize: () => new Promise<UsageAuthorizationDecision>((resolve) => asked(resolve)),
    },
    pricing: { pricingAt: async () => [pricing], pricingEachAt: async () => [pricing] },
    availableWon: "100",
    answerWaitMs: 50,
    completed: (completion) => completions.push(completion),
  });
  const answer = async (decision: UsageAuthorizationDecision) => (await statement)(decision);
  return { holds, answer, completions };
}

describe("a hold whose statement does not answer", () => {
  it("given no answer within the wait, then the request is refused as the ledger being away", async () => {
    const { holds } = holdsAnsweredLater();

    await expect(holds.begin(request).placed).rejects.toThrow(LedgerUnavailableError);
  });

  it("given the hold placed after its request was refused, then it is released whole, once", async () => {
    // Given: a request refused while its statement has not answered
    const { holds, answer, completions } = holdsAnsweredLater();
    const hold = holds.begin(request);
    await expect(hold.placed).rejects.toThrow(LedgerUnavailableError);
    expect(completions).toEqual([]);

    // When: the statement places the hold after all
    await answer({ kind: "held", holdWon: "3.5", availableWon: "96.5" });

    // Then: its void is written, releasing all it holds, and the request's own void (its handler's clean-up)
    // adds nothing
    await expect.poll(() => completions.length).toBe(1);
    expect(completions[0]).toMatchObject({
      requestId: request.requestId,
      pendingWon: "0",
      settlement: {
        type: "UsageVoided",
        data: { releasedWon: "3.5", reason: "ledger-unavailable" },
      },
    });
    hold.void("ledger-unavailable");
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(completions).toHaveLength(1);
  });

  it("given the answer within the wait, then the hold stands and nothing is released", async () => {
    const { holds, answer, completions } = holdsAnsweredLater();
    const hold = holds.begin(request);

    await answer({ kind: "held", holdWon: "3.5", availableWon: "96.5" });

    await expect(hold.placed).resolves.toBeUndefined();
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(completions).toEqual([]);
  });
});
