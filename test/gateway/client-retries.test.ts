import OpenAI from "openai";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { ProjectionLagError } from "../../src/ledger/projection/projection-waiter";
import { type GatewayHarness, startGatewayHarness } from "../support/gateway-harness";

/**
 * The official client resends every 408, 409, 429 and 5xx on its own (twice by default) unless the answer
 * says `x-should-retry: false`. A 503 saying a write was recorded but is not visible yet must say it: sent
 * again, the write is recorded again. Driven with the client itself, through its generic `post`, as any
 * client built the same way (Stainless) would send it.
 */

let harness: GatewayHarness;

beforeAll(async () => {
  harness = await startGatewayHarness({ label: "client_retries" });
}, 60_000);
afterAll(async () => {
  await harness?.close();
});
afterEach(() => {
  vi.restoreAllMocks();
});

describe("the official client's automatic retries", () => {
  it("given a key issued whose read models lag, when the 503 reaches a client that retries 5xx, then it is sent once and one key exists", async () => {
    // Given: the write is recorded, its projections do not catch up in time
    const session = await harness.session("retry-owner");
    vi.spyOn(harness.service.waiter, "waitFor").mockRejectedValue(
      new ProjectionLagError(["active-keys"], 10_000),
    );
    const attempts: { status: number; shouldRetry: string | null }[] = [];
    const client = new OpenAI({
      apiKey: session,
      baseURL: harness.url,
      maxRetries: 2,
      fetch: async (input, init) => {
        const response = await fetch(input, init);
        attempts.push({ status: response.status, shouldRetry: response.headers.get("x-should-retry") });
        return response;
      },
    });

    // When
    const issuing = client.post("/llm/apis", { body: { name: "retried", isOrganization: false } });

    // Then: one attempt, told not to resend, and one key issued
    await expect(issuing).rejects.toMatchObject({
      constructor: OpenAI.InternalServerError,
      status: 503,
      error: expect.objectContaining({ code: 300, type: "model_processing_error" }),
    });
    expect(attempts).toEqual([{ status: 503, shouldRetry: "false" }]);
    const { rows } = await harness.service.ledger.pool.query<{ name: string }>(
      "SELECT data->>'name' AS name FROM ledger_events WHERE type = 'ApiKeyIssued' AND data->>'issuedByUserId' = $1",
      ["retry-owner"],
    );
    expect(rows.map((row) => row.name)).toEqual(["retried"]);
  });
});
