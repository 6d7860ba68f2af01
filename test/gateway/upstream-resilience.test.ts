import { APIError } from "openai";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { allProjections } from "../../projections";
import { modelFamilies } from "../../src/config";
import { metricsRegistry } from "../../src/kernel/metrics-registry";
import { Money } from "../../src/kernel/money";
import type { EventData } from "../../src/ledger/events";
import { verifyProjections } from "../../src/ledger/verify-projections";
import { findModel, installModels } from "../../src/providers/catalog";
import type { ModelFamily } from "../../src/providers/provider";
import { type Simulator, startSimulator } from "../../src/providers/simulator/simulator";
import { type FaultyUpstream, startFaultyUpstream } from "../support/faulty-upstream";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../support/gateway-harness";

/**
 * Upstream failures before output (C13) through the real gateway, its ledger and billing, with the official
 * openai client. Fake upstreams are the simulator (every real protocol) behind servers failing on cue.
 */

const requestsCount = 2_000;
const clientsConcurrency = 24;
const requestDeadlineMs = 10_000;

/** A fixed-seed generator (mulberry32): the same failure pattern on every run. */
function seededRandom(seed: number): () => number {
  let state = seed;
  return () => {
    state = (state + 0x6d2b79f5) | 0;
    let value = Math.imul(state ^ (state >>> 15), 1 | state);
    value = (value + Math.imul(value ^ (value >>> 7), 61 | value)) ^ value;
    return ((value ^ (value >>> 14)) >>> 0) / 4_294_967_296;
  };
}

type Settlement = { type: string; data: EventData<"UsageRecorded"> | EventData<"UsageVoided"> };

async function settlementsOf(harness: GatewayHarness, requestIds: readonly string[]) {
  const result = await harness.service.ledger.pool.query<{
    stream_id: string;
    types: string[];
    events: Settlement[];
  }>(
    `SELECT stream_id, array_agg(type ORDER BY stream_version) AS types,
            json_agg(json_build_object('type', type, 'data', data) ORDER BY stream_version) AS events
     FROM ledger_events WHERE stream_id = ANY($1) GROUP BY stream_id`,
    [requestIds.map((requestId) => `usage-${requestId}`)],
  );
  return new Map(result.rows.map((row) => [row.stream_id.slice("usage-".length), row]));
}

describe("upstream resilience through the gateway (C13)", () => {
  let simulator: Simulator;
  let chaos: FaultyUpstream;
  let gammaEast: FaultyUpstream;
  let gammaWest: FaultyUpstream;
  let throttled: FaultyUpstream;
  let broken: FaultyUpstream;
  let harness: GatewayHarness;
  let apiKey: string;

  beforeAll(async () => {
    simulator = await startSimulator({});
    chaos = await startFaultyUpstream(simulator.url);
    gammaEast = await startFaultyUpstream(simulator.url);
    gammaWest = await startFaultyUpstream(simulator.url);
    throttled = await startFaultyUpstream(simulator.url);
    broken = await startFaultyUpstream(simulator.url);
    throttled.setPlan(() => ({ kind: "status", status: 429, retryAfter: "30" }));
    broken.setPlan(() => ({ kind: "status", status: 503 }));
    // zeta-mini falls back to gamma-4-3 (another family and price) when its own upstream fails.
    installModels([{ ...findModel("zeta-mini")!, fallbacks: ["gamma-4-3"] }]);
    const upstreamOf: Record<ModelFamily, string> = {
      alpha: chaos.url,
      beta: chaos.url,
      delta: chaos.url,
      gamma: simulator.url,
      epsilon: throttled.url,
      zeta: broken.url,
    };
    harness = await startGatewayHarness({
      label: "upstream_resilience",
      simulator: {},
      billing: {},
      service: {
        adminToken: testSecrets.adminToken,
        upstreams: Object.fromEntries(
          modelFamilies.map((family) => [
            family,
            { baseUrl: upstreamOf[family], apiKey: `secret-${family}` },
          ]),
        ) as Record<ModelFamily, { baseUrl: string; apiKey: string }>,
        upstreamResilience: {
          modelEndpoints: new Map([
            [
              "gamma-4-5",
              [
                { name: "gamma-east", baseUrl: gammaEast.url, apiKey: "secret-east", weight: 1 },
                { name: "gamma-west", baseUrl: gammaWest.url, apiKey: "secret-west", weight: 1 },
              ],
            ],
          ]),
          limits: { requestDeadlineMs, breakerOpenMs: 60_000 },
        },
      },
    });
    const session = await harness.session("resilient");
    apiKey = (await harness.issueKey(session)).key;
    await harness.topUp({ kind: "user", id: "resilient" }, "1000000");
  }, 60_000);
  afterAll(async () => {
    await harness?.close();
    for (const upstream of [chaos, gammaEast, gammaWest, throttled, broken]) await upstream?.close();
    await simulator?.close();
  });

  it("serves ≥ 99.5% of 2,000 requests when 30% of attempts answer 429, 10% 503 and 5% reset; each billed once for the answering attempt", async () => {
    const random = seededRandom(27);
    chaos.setPlan(() => {
      const draw = random();
      if (draw < 0.15) return { kind: "status", status: 429, retryAfter: "1" };
      if (draw < 0.3) return { kind: "status", status: 429 };
      if (draw < 0.4) return { kind: "status", status: 503 };
      if (draw < 0.45) return { kind: "reset" };
      return { kind: "pass" };
    });
    const models = ["alpha-5.4", "alpha-5.4-pro", "beta-3-flash", "delta-4.5-haiku"];
    const client = harness.openai(apiKey, { timeoutMs: requestDeadlineMs + 10_000 });
    type Answer = { requestId: string; ok: boolean; outputTokens?: number; httpStatus?: number; ms: number };
    const answers: Answer[] = [];

    const one = async (index: number): Promise<Answer> => {
      const model = models[index % 4]!;
      const streamed = Math.floor(index / 4) % 2 === 1;
      const responsesFormat = Math.floor(index / 8) % 2 === 1;
      const startedMs = Date.now();
      try {
        if (responsesFormat) {
          const body = { model, input: `Request ${index}`, max_output_tokens: 16 };
          if (streamed) {
            const { data, response } = await client.responses
              .create({ ...body, stream: true })
              .withResponse();
            let outputTokens: number | undefined;
            for await (const event of data)
              if (event.type === "response.completed") outputTokens = event.response.usage!.output_tokens;
            return {
              requestId: response.headers.get("x-request-id")!,
              ok: true,
              outputTokens,
              ms: Date.now() - startedMs,
            };
          }
          const { data, response } = await client.responses.create(body).withResponse();
          return {
            requestId: response.headers.get("x-request-id")!,
            ok: true,
            outputTokens: data.usage!.output_tokens,
            ms: Date.now() - startedMs,
          };
        }
        const body = {
          model,
          messages: [{ role: "user" as const, content: `Request ${index}` }],
          max_tokens: 16,
        };
        if (streamed) {
          const { data, response } = await client.chat.completions
            .create({ ...body, stream: true })
            .withResponse();
          let outputTokens: number | undefined;
          for await (const chunk of data) if (chunk.usage) outputTokens = chunk.usage.completion_tokens;
          return {
            requestId: response.headers.get("x-request-id")!,
            ok: true,
            outputTokens,
            ms: Date.now() - startedMs,
          };
        }
        const { data, response } = await client.chat.completions.create(body).withResponse();
        return {
          requestId: response.headers.get("x-request-id")!,
          ok: true,
          outputTokens: data.usage!.completion_tokens,
          ms: Date.now() - startedMs,
        };
      } catch (error) {
        if (!(error instanceof APIError)) throw error;
        // Only C13's answers: 429 with Retry-After, or 500/300.
        expect([429, 500]).toContain(error.status);
        if (error.status === 429) expect(Number(error.headers?.get("retry-after"))).toBeGreaterThanOrEqual(1);
        return {
          requestId: error.headers!.get("x-request-id")!,
          ok: false,
          httpStatus: error.status,
          ms: Date.now() - startedMs,
        };
      }
    };
    let next = 0;
    await Promise.all(
      Array.from({ length: clientsConcurrency }, async () => {
        while (next < requestsCount) answers.push(await one(next++));
      }),
    );

    const served = answers.filter((answer) => answer.ok);
    expect(served.length).toBeGreaterThanOrEqual(requestsCount * 0.995);
    expect(Math.max(...answers.map((answer) => answer.ms))).toBeLessThan(requestDeadlineMs + 2_000);

    // Every answer is settled once: charged for the answering attempt, or its hold voided.
    const pool = harness.service.ledger.pool;
    await expect
      .poll(
        async () =>
          (
            await pool.query<{ count: number }>(
              "SELECT count(*)::int AS count FROM ledger_events WHERE type = 'UsageCharged' AND stream_id = ANY($1)",
              [served.map((answer) => `usage-${answer.requestId}`)],
            )
          ).rows[0]!.count,
        { timeout: 60_000, interval: 250 },
      )
      .toBe(served.length);
    const settlements = await settlementsOf(
      harness,
      answers.map((answer) => answer.requestId),
    );
    let attemptsRecorded = 0;
    for (const answer of answers) {
      const settlement = settlements.get(answer.requestId)!;
      expect(settlement.types).toEqual(
        answer.ok ? ["UsageAuthorized", "UsageRecorded", "UsageCharged"] : ["UsageAuthorized", "UsageVoided"],
      );
      const settled = settlement.events[1]!.data;
      const attempts = settled.attempts!;
      attemptsRecorded += attempts.length;
      // Names only: never a URL or a key.
      expect(JSON.stringify(attempts)).not.toMatch(/secret|127\.0\.0\.1/);
      if (!answer.ok) continue;
      expect(attempts.at(-1)).toMatchObject({ status: 200, error: null });
      expect(attempts.slice(0, -1).every((attempt) => attempt.error !== null)).toBe(true);
      // Billed for what the answering attempt produced, as the client was told.
      expect((settled as EventData<"UsageRecorded">).tokens.output).toBe(answer.outputTokens);
    }
    // Every attempt that reached the fake upstream is on the ledger, and retries did happen.
    expect(attemptsRecorded).toBe(chaos.served.length);
    expect(chaos.served.length).toBeGreaterThan(requestsCount * 1.5);
    await expect
      .poll(async () => (await pool.query("SELECT 1 FROM open_holds")).rowCount, { timeout: 30_000 })
      .toBe(0);
    expect(
      await verifyProjections({ pool, store: harness.service.ledger.store, projections: allProjections }),
    ).toEqual([]);
  }, 600_000);

  it("answers 429 with the upstream's Retry-After at once when it lies past the deadline", async () => {
    const startedMs = Date.now();
    const failure = await harness
      .openai(apiKey)
      .chat.completions.create({ model: "epsilon", messages: [{ role: "user", content: "Hi" }] })
      .catch((error: unknown) => error);

    expect(failure).toBeInstanceOf(APIError);
    const error = failure as APIError;
    expect(error.status).toBe(429);
    expect(error.headers?.get("retry-after")).toBe("30");
    expect(error.error).toMatchObject({ code: 300 });
    expect(Date.now() - startedMs).toBeLessThan(2_000);
    expect(throttled.served).toHaveLength(1);
  });

  it("answers C13 errors with Retry-After once every endpoint is down, one attempt a request, no hold left open, and the breakers show it", async () => {
    await gammaEast.down();
    await gammaWest.down();
    const client = harness.openai(apiKey);
    const ask = () =>
      client.chat.completions
        .create({ model: "gamma-4-5", messages: [{ role: "user", content: "Anyone there?" }] })
        .withResponse()
        .then(
          () => undefined,
          (error: unknown) => error as APIError,
        );
    const first = (await ask())!;
    expect(first.status).toBe(500);
    expect(first.message).toMatch(/could not reach the upstream; 8 attempts made/);
    // Each endpoint opens once 5 requests in its window failed there; from then on each request makes one
    // panic attempt (the open breaker never answers by itself), and its 500 says when the next probe goes.
    let last: APIError | undefined;
    for (let index = 0; index < 12 && !last?.message.includes("circuit open"); index++) last = await ask();
    const startedMs = Date.now();
    last = await ask();
    expect(Date.now() - startedMs).toBeLessThan(500);
    expect(last!.status).toBe(500);
    expect(last!.error).toMatchObject({ code: 300 });
    expect(last!.message).toMatch(
      /could not reach the upstream; 1 attempt made; circuit open, next probe in \d+ s/,
    );
    const retryAfterSeconds = Number(last!.headers!.get("retry-after"));
    expect(retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(retryAfterSeconds).toBeLessThanOrEqual(60);

    const requestId = last!.headers!.get("x-request-id")!;
    await expect
      .poll(async () => (await settlementsOf(harness, [requestId])).get(requestId)?.types, {
        timeout: 60_000,
      })
      .toEqual(["UsageAuthorized", "UsageVoided"]);
    const voided = (await settlementsOf(harness, [requestId])).get(requestId)!.events[1]!
      .data as EventData<"UsageVoided">;
    expect(voided.attempts).toHaveLength(1);
    await expect
      .poll(async () => (await harness.service.ledger.pool.query("SELECT 1 FROM open_holds")).rowCount, {
        timeout: 60_000,
      })
      .toBe(0);
    const metrics = await metricsRegistry.metrics();
    expect(metrics).toContain(
      'won_gateway_upstream_breaker_state{upstream_endpoint="gamma-east",model="gamma-4-5",state="open"} 1',
    );
    expect(metrics).toContain(
      'won_gateway_upstream_breaker_state{upstream_endpoint="gamma-west",model="gamma-4-5",state="open"} 1',
    );
    expect(metrics).not.toMatch(/secret-east|secret-west/);
    const health = await fetch(`${harness.url}/admin/upstreams`, {
      headers: { authorization: `Bearer ${testSecrets.adminToken}` },
    });
    const body = (await health.json()) as {
      data: { endpoint: string; breakerState: string; model: string }[];
    };
    expect(body.data.filter((endpoint) => endpoint.endpoint.startsWith("gamma-"))).toEqual([
      expect.objectContaining({ endpoint: "gamma-east", breakerState: "open", model: "gamma-4-5" }),
      expect.objectContaining({ endpoint: "gamma-west", breakerState: "open", model: "gamma-4-5" }),
    ]);
    expect(JSON.stringify(body)).not.toMatch(/secret|127\.0\.0\.1/);
  }, 120_000);

  it("does not retry a stream that fails after its first byte, and bills what was delivered", async () => {
    simulator.setFault({ kind: "break-stream", afterDeltas: 3, mode: "destroy-socket" });
    try {
      const { data, response } = await harness
        .openai(apiKey)
        .chat.completions.create({
          model: "gamma-4-3",
          messages: [{ role: "user", content: "Tell me a long story about retries" }],
          stream: true,
        })
        .withResponse();
      let text = "";
      const failure = await (async () => {
        for await (const chunk of data) text += chunk.choices[0]?.delta.content ?? "";
      })().catch((error: unknown) => error);
      expect(failure).toBeDefined();
      expect(text.length).toBeGreaterThan(0);

      const requestId = response.headers.get("x-request-id")!;
      await expect
        .poll(async () => (await settlementsOf(harness, [requestId])).get(requestId)?.types, {
          timeout: 60_000,
        })
        .toEqual(["UsageAuthorized", "UsageRecorded", "UsageCharged"]);
      const recorded = (await settlementsOf(harness, [requestId])).get(requestId)!.events[1]!
        .data as EventData<"UsageRecorded">;
      expect(recorded).toMatchObject({ outcome: "upstream-failed", usageSource: "estimated" });
      expect(recorded.tokens.output).toBeGreaterThan(0);
      expect(recorded.attempts).toEqual([
        { endpoint: "gamma", model: "gamma-4-3", status: 200, error: null, durationMs: expect.any(Number) },
      ]);
    } finally {
      simulator.setFault(undefined);
    }
  }, 120_000);

  it("answers from the configured fallback, names it in the reply and bills it at its own price", async () => {
    const { data, response } = await harness
      .openai(apiKey)
      .chat.completions.create({ model: "zeta-mini", messages: [{ role: "user", content: "Fall back" }] })
      .withResponse();

    expect(data.model).toBe("gamma-4-3");
    const requestId = response.headers.get("x-request-id")!;
    await expect
      .poll(async () => (await settlementsOf(harness, [requestId])).get(requestId)?.types, {
        timeout: 60_000,
      })
      .toEqual(["UsageAuthorized", "UsageRecorded", "UsageCharged"]);
    const events = (await settlementsOf(harness, [requestId])).get(requestId)!.events;
    const authorized = events[0]!.data as unknown as EventData<"UsageAuthorized">;
    const recorded = events[1]!.data as EventData<"UsageRecorded">;
    const charged = events[2]!.data as unknown as EventData<"UsageCharged">;
    expect(authorized.model).toBe("zeta-mini");
    expect(recorded.model).toBe("gamma-4-3");
    expect(
      recorded.attempts!.map((attempt) => `${attempt.endpoint}/${attempt.model}/${attempt.status}`),
    ).toEqual([
      ...new Array(recorded.attempts!.length - 1).fill("zeta/zeta-mini/503"),
      "gamma/gamma-4-3/200",
    ]);
    // Priced as gamma-4-3 (USD 3.00 / 15.00 per 1M at ₩1,400), and the pending cost is what the charge posts.
    expect(charged.model).toBe("gamma-4-3");
    expect(charged.breakdown.inputUsdPerMillionTokens).toBe("3");
    expect(charged.breakdown.outputUsdPerMillionTokens).toBe("15");
    expect(charged.amountWon).toBe(recorded.pendingWon);
    // The hold was priced as the dearer of the two models that could answer (C10: whichever answers, the
    // request costs no more than its hold's estimate): gamma-4-3, not the cheaper zeta-mini requested.
    const { inputTokensMax, outputTokensMax, estimatedWon } = authorized.estimate;
    const estimateAt = (inputUsdPerMillion: string, outputUsdPerMillion: string) =>
      new Money(inputTokensMax)
        .times(inputUsdPerMillion)
        .plus(new Money(outputTokensMax).times(outputUsdPerMillion))
        .dividedBy(1_000_000)
        .times(charged.breakdown.fxRateKrwPerUsd)
        .times(new Money(1).minus(charged.breakdown.discountRate))
        .toDecimalPlaces(6, Money.ROUND_HALF_UP);
    expect(new Money(estimatedWon).equals(estimateAt("3", "15"))).toBe(true);
    expect(estimateAt("0.15", "0.15").lessThan(estimatedWon)).toBe(true);
  }, 120_000);
});
