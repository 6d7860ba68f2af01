import { Agent } from "undici";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { modelFamilies } from "../../../src/config";
import { Money } from "../../../src/kernel/money";
import type { ModelFamily } from "../../../src/providers/provider";
import { type Simulator, startSimulator } from "../../../src/providers/simulator/simulator";
import { type FaultyUpstream, startFaultyUpstream } from "../../support/faulty-upstream";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../../support/gateway-harness";
import { callJson } from "../../support/json-call";

/**
 * A refused request reaches no upstream (C10: "nothing is sent upstream"), in a burst on one gateway
 * process too. The upstream call may start while its hold's statement runs, but only when the account has
 * room for ten such holds beside every hold this process has in flight on it, and never for a key with a
 * spend or rate limit, which this process cannot see the state of. Counted at the upstream itself.
 */

const dispatcher = new Agent({ connections: 200 });
const model = "alpha-5.4";

describe("refused requests and the upstream", () => {
  let simulator: Simulator;
  let upstream: FaultyUpstream;
  let harness: GatewayHarness;

  beforeAll(async () => {
    simulator = await startSimulator({});
    upstream = await startFaultyUpstream(simulator.url);
    harness = await startGatewayHarness({
      label: "refused_no_upstream",
      service: {
        adminToken: testSecrets.adminToken,
        upstreams: Object.fromEntries(
          modelFamilies.map((family) => [family, { baseUrl: upstream.url, apiKey: `secret-${family}` }]),
        ) as Record<ModelFamily, { baseUrl: string; apiKey: string }>,
      },
    });
  }, 60_000);
  afterAll(async () => {
    await harness?.close();
    await upstream?.close();
    await simulator?.close();
  });

  async function chat(key: string): Promise<number> {
    const response = await fetch(`${harness.baseUrl}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({
        model,
        max_tokens: 50,
        messages: [{ role: "user", content: "Tell me a story" }],
      }),
      // @ts-expect-error undici's dispatcher option, which the DOM typing of fetch does not know
      dispatcher,
    });
    await response.arrayBuffer();
    return response.status;
  }

  /** The hold estimate of one such request, read from its `UsageAuthorized` once the log has it. */
  async function estimateOfOneRequest(): Promise<Money> {
    const session = await harness.session("estimate-probe");
    const { key } = await harness.issueKey(session);
    await harness.topUp({ kind: "user", id: "estimate-probe" }, "100000");
    expect(await chat(key)).toBe(200);
    for (let attempt = 0; attempt < 200; attempt++) {
      const result = await harness.service.ledger.pool.query<{ estimated: string }>(
        `SELECT data->'estimate'->>'estimatedWon' AS estimated FROM ledger_events
         WHERE type = 'UsageAuthorized' AND data->'account'->>'id' = 'estimate-probe'`,
      );
      if (result.rows[0]) return new Money(result.rows[0].estimated);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error("the probe's hold never reached the log");
  }

  it("given 100 requests at once on an account with room for about 50, then each refused one reached no upstream", async () => {
    const estimate = await estimateOfOneRequest();
    const session = await harness.session("burst");
    const { key } = await harness.issueKey(session);
    await harness.topUp(
      { kind: "user", id: "burst" },
      estimate.times(60).toDecimalPlaces(2, Money.ROUND_UP).toFixed(),
    );
    // One request after another first: the gateway learns from each hold what the account has left (room
    // for about 50 more), so the burst's requests may start upstream before their holds.
    for (let index = 0; index < 10; index++) expect(await chat(key)).toBe(200);
    const before = upstream.served.length;

    // The account's holds wait on its row until the whole burst has arrived: no hold's answer can tell the
    // gateway the room is going before every request of the burst has been begun.
    const blocker = await harness.service.ledger.pool.connect();
    await blocker.query("BEGIN");
    await blocker.query(
      "SELECT 1 FROM account_funds_authorized WHERE account_kind = 'user' AND account_id = 'burst' FOR UPDATE",
    );
    const burst = Promise.all(Array.from({ length: 100 }, () => chat(key)));
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    await blocker.query("COMMIT");
    blocker.release();
    const statuses = await burst;

    const served = statuses.filter((status) => status === 200).length;
    expect(served).toBeGreaterThanOrEqual(50);
    expect(served).toBeLessThan(100);
    expect(statuses.filter((status) => status !== 200).every((status) => status === 400)).toBe(true);
    expect(upstream.served.length - before).toBe(served);
  }, 120_000);

  it("given a rate limit of 20 per minute, when 120 requests come at once, then the 100 refused reached no upstream", async () => {
    const session = await harness.session("rated");
    const limited = await harness.issueKey(session);
    await harness.topUp({ kind: "user", id: "rated" }, "1000000");
    const limits = await callJson(harness.url, "PUT", `/llm/apis/${limited.uuid}/limits`, session, {
      rateLimitRequestsPerMinute: 20,
    });
    expect(limits.status).toBe(200);
    const before = upstream.served.length;

    const statuses = await Promise.all(Array.from({ length: 120 }, () => chat(limited.key)));

    const served = statuses.filter((status) => status === 200).length;
    // 20 in this minute; a burst straddling the minute's turn may get up to 20 more.
    expect(served).toBeGreaterThanOrEqual(20);
    expect(served).toBeLessThanOrEqual(40);
    expect(statuses.filter((status) => status !== 200).every((status) => status === 429)).toBe(true);
    expect(upstream.served.length - before).toBe(served);
  }, 120_000);
});
