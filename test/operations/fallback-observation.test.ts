import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { modelFamilies } from "../../src/config";
import { findModel, installModels } from "../../src/providers/catalog";
import type { ModelFamily } from "../../src/providers/provider";
import { type Simulator, startSimulator } from "../../src/providers/simulator/simulator";
import { capturedLog } from "../support/captured-log";
import { type FaultyUpstream, startFaultyUpstream } from "../support/faulty-upstream";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../support/gateway-harness";
import { waitForLedgerAtRest } from "../support/ledger-at-rest";
import { type ServedOperations, servedOperations } from "../support/served-operations";
import { eventually } from "../workers/queue-test-support";
import { samplesOf, sampleValue } from "./prometheus-text";

/**
 * What operators see of a request a configured fallback answered (docs/upstream-resilience.md, "Fallbacks"):
 * the metrics and the access line name the model requested and the one that answered, so a dashboard shows
 * which upstream model served the traffic, its latency, errors, tokens and won, and a fallback storm is visible.
 */

type AccessLine = { msg: string; requestId?: string; model?: string; answeredBy?: string };

const { logger, lines } = capturedLog<AccessLine>();
let simulator: Simulator;
let failing: FaultyUpstream;
let harness: GatewayHarness;
let operations: ServedOperations;
let apiKey: string;

beforeAll(async () => {
  simulator = await startSimulator({});
  failing = await startFaultyUpstream(simulator.url);
  failing.setPlan(() => ({ kind: "status", status: 503 }));
  // zeta-mini falls back to gamma-4-3 (another family, another price); zeta's upstream answers only 503.
  installModels([{ ...findModel("zeta-mini")!, fallbacks: ["gamma-4-3"] }]);
  operations = servedOperations();
  harness = await startGatewayHarness({
    label: "fallback_observation",
    billing: {},
    service: {
      adminToken: testSecrets.adminToken,
      logger,
      operationsRouter: operations.router,
      upstreams: Object.fromEntries(
        modelFamilies.map((family) => [
          family,
          { baseUrl: family === "zeta" ? failing.url : simulator.url, apiKey: `secret-${family}` },
        ]),
      ) as Record<ModelFamily, { baseUrl: string; apiKey: string }>,
    },
  });
  const session = await harness.session("fallback-observer");
  apiKey = (await harness.issueKey(session)).key;
  await harness.topUp({ kind: "user", id: "fallback-observer" }, "100000");
}, 60_000);
afterAll(async () => {
  await harness?.close();
  await operations?.close();
  await failing?.close();
  await simulator?.close();
});

const scrape = async () => {
  const response = await fetch(`${harness.url}/metrics`);
  expect(response.status).toBe(200);
  return response.text();
};

const chat = {
  gen_ai_operation_name: "chat",
  endpoint: "chat.completions",
  key_kind: "personal",
};
// The provider is the one that served the request (OpenTelemetry's gen_ai.provider.name): gamma's, not zeta's.
const fellBack = {
  ...chat,
  gen_ai_request_model: "zeta-mini",
  gen_ai_response_model: "gamma-4-3",
  gen_ai_provider_name: "gamma",
};
const direct = {
  ...chat,
  gen_ai_request_model: "gamma-4-3",
  gen_ai_response_model: "gamma-4-3",
  gen_ai_provider_name: "gamma",
};
const messages = [{ role: "user" as const, content: "Fall back" }];

describe("GET /metrics of requests a fallback answered", () => {
  it("given zeta-mini failing and gamma-4-3 its fallback, when zeta-mini is requested, then the request, latency and token metrics name zeta-mini requested and gamma-4-3 answering", async () => {
    // Given
    const before = await scrape();
    const client = harness.openai(apiKey);

    // When: one JSON and one streamed request for zeta-mini, one for gamma-4-3 itself, one refused
    const json = await client.chat.completions.create({ model: "zeta-mini", messages });
    const stream = await client.chat.completions.create({
      model: "zeta-mini",
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    let streamedOutputTokens = 0;
    for await (const chunk of stream) streamedOutputTokens += chunk.usage?.completion_tokens ?? 0;
    await client.chat.completions.create({ model: "gamma-4-3", messages });
    const refused = await fetch(`${harness.baseUrl}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "zeta-mini", temperature: 9, messages }),
    });
    expect(refused.status).toBe(400);
    const after = await scrape();

    // Then
    const delta = (name: string, labels: Record<string, string>) =>
      sampleValue(after, name, labels) - sampleValue(before, name, labels);
    expect(json.model).toBe("gamma-4-3");
    expect(delta("won_gateway_requests_total", { ...fellBack, status: "200", error_type: "" })).toBe(2);
    expect(delta("won_gateway_requests_total", { ...direct, status: "200", error_type: "" })).toBe(1);
    // Nothing answered the refused request: it names no answering model, and the provider it was for.
    expect(
      delta("won_gateway_requests_total", {
        ...chat,
        gen_ai_request_model: "zeta-mini",
        gen_ai_response_model: "none",
        gen_ai_provider_name: "zeta",
        status: "400",
      }),
    ).toBe(1);
    expect(delta("gen_ai_server_request_duration_seconds_count", { ...fellBack, status: "200" })).toBe(2);
    expect(delta("gen_ai_server_time_to_first_token_seconds_count", fellBack)).toBe(2);
    expect(delta("won_gateway_overhead_seconds_count", fellBack)).toBe(2);
    expect(delta("gen_ai_client_token_usage_sum", { ...fellBack, gen_ai_token_type: "output" })).toBe(
      json.usage!.completion_tokens + streamedOutputTokens,
    );
    expect(streamedOutputTokens).toBeGreaterThan(0);
    // Each model's upstream attempts have their durations: zeta-mini's failing ones apart from gamma-4-3's.
    const attempts = (model: string, outcome: string) =>
      delta("won_gateway_upstream_attempts_total", { model, outcome });
    const timed = (model: string, outcome: string) =>
      delta("won_gateway_upstream_attempt_duration_seconds_count", { model, outcome });
    expect(attempts("zeta-mini", "5xx")).toBeGreaterThanOrEqual(2);
    expect(timed("zeta-mini", "5xx")).toBe(attempts("zeta-mini", "5xx"));
    expect(timed("gamma-4-3", "2xx")).toBe(3);
    expect(timed("zeta-mini", "2xx")).toBe(0);
    // Every attempt but each request's first is a retry, whichever model it went to: three requests reached
    // an upstream (the refused one did not), and the two for zeta-mini were each answered by its fallback.
    const summed = (text: string, name: string) =>
      samplesOf(text)
        .filter((sample) => sample.name === name)
        .reduce((sum, sample) => sum + sample.value, 0);
    const summedDelta = (name: string) => summed(after, name) - summed(before, name);
    expect(summedDelta("won_gateway_upstream_retries_total")).toBe(
      summedDelta("won_gateway_upstream_attempts_total") - 3,
    );
    expect(summedDelta("won_gateway_upstream_retries_total")).toBeGreaterThanOrEqual(2);
    expect(
      delta("won_gateway_upstream_fallbacks_total", { model: "zeta-mini", answering_model: "gamma-4-3" }),
    ).toBe(2);
    expect(summedDelta("won_gateway_upstream_fallbacks_total")).toBe(2);
  }, 60_000);

  it("given a request for zeta-mini that gamma-4-3 answered, when it is charged, then the charge metrics name zeta-mini requested and gamma-4-3 charged", async () => {
    // Given: the earlier requests are logged and charged (their charges would land in this one's count)
    await waitForLedgerAtRest(harness.service.ledger.pool);
    const before = await scrape();
    const { response } = await harness
      .openai(apiKey)
      .chat.completions.create({ model: "zeta-mini", messages })
      .withResponse();
    const requestId = response.headers.get("x-request-id")!;

    // When
    let amountWon = "";
    await eventually("the usage is charged", async () => {
      const billing = await fetch(`${harness.url}/admin/billing?account=user:fallback-observer`, {
        headers: { authorization: `Bearer ${testSecrets.adminToken}` },
      });
      const rows = ((await billing.json()) as { data?: { requestId: string; amountWon: string }[] }).data;
      amountWon = rows?.find((row) => row.requestId === requestId)?.amountWon ?? "";
      return amountWon !== "";
    });
    const after = await scrape();

    // Then
    const charged = {
      gen_ai_request_model: "zeta-mini",
      gen_ai_response_model: "gamma-4-3",
      key_kind: "personal",
    };
    const delta = (name: string) => sampleValue(after, name, charged) - sampleValue(before, name, charged);
    expect(delta("won_gateway_charges_total")).toBe(1);
    expect(delta("won_gateway_charged_won_total")).toBeCloseTo(Number(amountWon), 6);
    expect(Number(amountWon)).toBeGreaterThan(0);
  }, 60_000);
});

describe("access log of a request a fallback answered", () => {
  it("given zeta-mini failing, when gamma-4-3 answers a request for it, then its line names zeta-mini as model and gamma-4-3 as answeredBy; a request its own model answered has no answeredBy", async () => {
    // Given
    const client = harness.openai(apiKey);

    // When
    const fallen = await client.chat.completions.create({ model: "zeta-mini", messages }).withResponse();
    const own = await client.chat.completions.create({ model: "gamma-4-3", messages }).withResponse();

    // Then
    const lineOf = async (requestId: string) => {
      await eventually("the line is written", async () =>
        lines.some((line) => line.msg === "request" && line.requestId === requestId),
      );
      return lines.find((line) => line.msg === "request" && line.requestId === requestId)!;
    };
    expect(await lineOf(fallen.response.headers.get("x-request-id")!)).toMatchObject({
      model: "zeta-mini",
      answeredBy: "gamma-4-3",
    });
    const ownLine = await lineOf(own.response.headers.get("x-request-id")!);
    expect(ownLine.model).toBe("gamma-4-3");
    expect(ownLine).not.toHaveProperty("answeredBy");
  }, 60_000);
});
