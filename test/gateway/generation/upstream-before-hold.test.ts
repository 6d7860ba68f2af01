import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { type GatewayHarness, startGatewayHarness } from "../../support/gateway-harness";

/**
 * The order in which a request's upstream call and its hold leave the gateway. A hold that need not come
 * first is asked for once the upstream request has left, so the upstream works while the hold's statement
 * runs; near the account's limit the hold comes first and nothing is sent upstream before it (C10).
 * Each hold's statement records how many upstream requests the simulator had received when it was sent.
 */

describe("the upstream call and the hold", () => {
  let harness: GatewayHarness;
  let apiKey: string;
  let emptyKey: string;
  const upstreamRequestsSeenByHolds: number[] = [];
  let restoreQuery = () => {};

  beforeAll(async () => {
    harness = await startGatewayHarness({ label: "upstream-before-hold" });
    apiKey = (await harness.issueKey(await harness.session("ample"))).key;
    await harness.topUp({ kind: "user", id: "ample" }, "100000");
    emptyKey = (await harness.issueKey(await harness.session("empty"))).key;
    const pool = harness.service.ledger.pool;
    const query = pool.query;
    pool.query = ((config: unknown, ...rest: unknown[]) => {
      if ((config as { name?: string } | null)?.name === "ledger-authorize-usage")
        upstreamRequestsSeenByHolds.push(harness.simulator.recordedRequests().length);
      return (query as (...args: unknown[]) => unknown).call(pool, config, ...rest);
    }) as typeof pool.query;
    restoreQuery = () => {
      pool.query = query;
    };
    // The first request opens the upstream connection (written once connected) and prices the model.
    await generate(apiKey, false);
  });
  afterAll(async () => {
    restoreQuery();
    await harness?.close();
  });
  beforeEach(() => {
    harness.simulator.clearRecordedRequests();
    upstreamRequestsSeenByHolds.length = 0;
  });

  async function generate(key: string, stream: boolean): Promise<Response> {
    const response = await fetch(`${harness.baseUrl}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "alpha-5.4-mini",
        messages: [{ role: "user", content: "Say something." }],
        max_tokens: 16,
        stream,
      }),
    });
    await response.text();
    return response;
  }

  it("sends a JSON request's upstream call before its hold's statement", async () => {
    expect((await generate(apiKey, false)).status).toBe(200);

    expect(upstreamRequestsSeenByHolds).toEqual([1]);
  });

  it("sends a stream's upstream call before its hold's statement", async () => {
    expect((await generate(apiKey, true)).status).toBe(200);

    expect(upstreamRequestsSeenByHolds).toEqual([1]);
  });

  it("places the hold first on an account with nothing available, and sends nothing upstream", async () => {
    const refused = await generate(emptyKey, false);

    expect(upstreamRequestsSeenByHolds).toEqual([0]);
    expect(refused.status).toBe(400);
    expect(harness.simulator.recordedRequests()).toHaveLength(0);
  });
});
