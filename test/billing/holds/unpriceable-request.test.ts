import { describe, expect, it } from "vitest";
import type { GenerationHolds } from "../../../src/billing/holds/generation-holds";
import { LedgerUnavailableError } from "../../../src/billing/holds/hold-refusal";
import {
  type PricingRequest,
  PricingUnavailableError,
} from "../../../src/billing/read-models/pricing-read-model";
import { toApiError } from "../../../src/gateway/middleware/error-handler";
import { generationHoldsWithFakes } from "../../support/generation-holds-with-fakes";
import { holdRequestOf } from "../../support/hold-fixtures";

/**
 * A request nothing prices — no FX rate recorded yet (a first start before its default rate) — fails closed
 * before anything is held, and says so: not as the ledger being away, which would send an operator after
 * the database.
 */

const request = holdRequestOf("req_unpriced");

function holdsWithoutRate(authorizations: { count: number }): GenerationHolds {
  const unpriced = async (requests: readonly PricingRequest[]) => {
    throw new PricingUnavailableError("no-fx-rate", requests[0]!);
  };
  return generationHoldsWithFakes({
    authorizer: {
      isSetApart: () => false,
      authorize: async () => {
        authorizations.count += 1;
        return { kind: "held", holdWon: "1", availableWon: "100" };
      },
    },
    pricing: { pricingAt: unpriced, pricingEachAt: unpriced },
    availableWon: "100",
  });
}

describe("a request nothing prices", () => {
  it("given no FX rate recorded, then nothing is held and the answer is 503/300 naming the rate, not the ledger", async () => {
    // Given
    const authorizations = { count: 0 };
    const holds = holdsWithoutRate(authorizations);

    // When
    const placed = holds.begin(request).placed;

    // Then
    await expect(placed).rejects.toThrow(PricingUnavailableError);
    await expect(placed).rejects.not.toThrow(LedgerUnavailableError);
    expect(authorizations.count).toBe(0);
    const answer = toApiError(await placed.catch((error: unknown) => error));
    expect(answer).toMatchObject({ httpStatus: 503, applicationCode: 300 });
    expect(answer.message).toContain("No KRW per USD rate is recorded yet");
  });
});
