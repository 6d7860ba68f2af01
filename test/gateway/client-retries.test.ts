import OpenAI from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { ProjectionLagError } from "../../src/ledger/projection/projection-waiter";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../support/gateway-harness";

/**
 * The official client resends every 408, 409, 429 and 5xx on its own (twice by default) unless the answer
 * says `x-should-retry: false`. A 503 saying a write was recorded but is not visible yet must say it: sent
 * again, the write is recorded again. Driven with the client itself, through its generic `post`, as any
 * client built the same way (Stainless) would send it.
 */

let harness: GatewayHarness;

beforeAll(async () => {
  harness = await startGatewayHarness({
    label: "client_retries",
    billing: {},
    service: { adminToken: testSecrets.adminToken },
  });
}, 60_000);
afterAll(async () => {
  await harness?.close();
});
afterEach(() => {
  vi.restoreAllMocks();
});

describe("the official client's automatic retries", () => {
  it("given a top-up without an Idempotency-Key whose read models lag, when the 503 reaches a client that retries 5xx, then it is sent once and the account credited once", async () => {
    // Given: the write is recorded, its projections do not catch up in time
    vi.spyOn(harness.service.waiter, "waitFor").mockRejectedValue(
      new ProjectionLagError(["balances"], 10_000),
    );
    const attempts: { status: number; shouldRetry: string | null }[] = [];
    const client = new OpenAI({
      apiKey: testSecrets.adminToken,
      baseURL: harness.url,
      maxRetries: 2,
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        attempts.push({ status: response.status, shouldRetry: response.headers.get("x-should-retry") });
        return response;
      },
    });

    // When
    const toppingUp = client.post("/admin/accounts/user/retry-payer/credits", {
      body: { amountWon: "5000", reference: "invoice 12" },
    });

    // Then: one attempt, told not to resend, and one credit
    await expect(toppingUp).rejects.toMatchObject({
      constructor: OpenAI.InternalServerError,
      status: 503,
      error: expect.objectContaining({ code: 300, type: "model_processing_error" }),
    });
    expect(attempts).toEqual([{ status: 503, shouldRetry: "false" }]);
    const { rows } = await harness.service.ledger.pool.query<{ amount: string }>(
      "SELECT data->>'amountWon' AS amount FROM ledger_events WHERE type = 'CreditToppedUp' AND data->'account'->>'id' = $1",
      ["retry-payer"],
    );
    expect(rows.map((row) => row.amount)).toEqual(["5000"]);
  });
});
