import { Writable } from "node:stream";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { billingMetrics } from "../../src/billing/billing-metrics";
import { errorTypeLabels } from "../../src/billing/metric-labels";
import { metricsRegistry } from "../../src/kernel/metrics-registry";
import { createOperations, type Operations } from "../../src/operations/operations";
import { listModels } from "../../src/providers/catalog";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../support/gateway-harness";
import { eventually } from "../workers/queue-test-support";
import { samplesOf, sampleValue } from "./prometheus-text";

/**
 * GET /metrics after known traffic: a request of known tokens moves the counters by exactly its tokens,
 * a charge by exactly its won; labels come from closed sets (never a key, user or request id). The
 * access log writes one line per request with what an operator needs and no secret.
 */

const logLines: Record<string, unknown>[] = [];
const logger = pino(
  { level: "info" },
  new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split("\n"))
        if (line.trim() !== "") logLines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  }),
);

let harness: GatewayHarness;
let operations: Operations;
let apiKey: string;
let keyUuid: string;

const scrape = async () => {
  const response = await fetch(`${harness.url}/metrics`);
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toContain("text/plain");
  return response.text();
};
const admin = (path: string, init: { method?: string; body?: unknown } = {}) =>
  fetch(`${harness.url}/admin${path}`, {
    method: init.method ?? "GET",
    headers: { authorization: `Bearer ${testSecrets.adminToken}`, "content-type": "application/json" },
    ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) }),
  });

beforeAll(async () => {
  harness = await startGatewayHarness({
    label: "metrics",
    billing: {},
    service: {
      adminToken: testSecrets.adminToken,
      logger,
      operationsRouter: (parts) => {
        operations = createOperations({
          queueBackend: { kind: "postgresql", databaseUrl: parts.ledger.pool.options.connectionString! },
          logger,
        });
        return operations.router(parts);
      },
    },
  });
  const session = await harness.session("metrics-user");
  ({ key: apiKey, uuid: keyUuid } = await harness.issueKey(session));
  await harness.topUp({ kind: "user", id: "metrics-user" }, "10000");
}, 60_000);
afterAll(async () => {
  await operations?.close();
  await harness?.close();
});

const personalChat = {
  gen_ai_request_model: "alpha-5.4-mini",
  gen_ai_operation_name: "chat",
  gen_ai_provider_name: "alpha",
  endpoint: "chat.completions",
  key_kind: "personal",
};

describe("GET /metrics", () => {
  it("moves the request, token and latency metrics by exactly one request's figures", async () => {
    const before = await scrape();
    const completion = await harness.openai(apiKey).chat.completions.create({
      model: "alpha-5.4-mini",
      messages: [{ role: "user", content: "Count to five" }],
    });
    const after = await scrape();
    const delta = (name: string, labels: Record<string, string>) =>
      sampleValue(after, name, labels) - sampleValue(before, name, labels);

    expect(delta("won_gateway_requests_total", { ...personalChat, status: "200", error_type: "" })).toBe(1);
    expect(delta("gen_ai_server_request_duration_seconds_count", { ...personalChat, status: "200" })).toBe(1);
    expect(delta("gen_ai_client_token_usage_sum", { ...personalChat, gen_ai_token_type: "input" })).toBe(
      completion.usage!.prompt_tokens,
    );
    expect(delta("gen_ai_client_token_usage_sum", { ...personalChat, gen_ai_token_type: "output" })).toBe(
      completion.usage!.completion_tokens,
    );
    expect(delta("gen_ai_server_time_to_first_token_seconds_count", personalChat)).toBe(1);
    expect(delta("won_gateway_overhead_seconds_count", personalChat)).toBe(1);
    const overheadSeconds = delta("won_gateway_overhead_seconds_sum", personalChat);
    const totalSeconds = delta("gen_ai_server_request_duration_seconds_sum", {
      ...personalChat,
      status: "200",
    });
    expect(overheadSeconds).toBeGreaterThan(0);
    expect(overheadSeconds).toBeLessThanOrEqual(totalSeconds);
  });

  it("labels models requests with their key's kind, and a retrieved model with its name", async () => {
    const before = await scrape();
    const client = harness.openai(apiKey);
    await client.models.list();
    await client.models.retrieve("alpha-5.4-mini");
    const after = await scrape();
    const delta = (labels: Record<string, string>) =>
      sampleValue(after, "won_gateway_requests_total", labels) -
      sampleValue(before, "won_gateway_requests_total", labels);
    const models = { endpoint: "models", key_kind: "personal", status: "200" };
    expect(delta({ ...models, gen_ai_request_model: "none" })).toBe(1);
    expect(delta({ ...models, gen_ai_request_model: "alpha-5.4-mini", gen_ai_provider_name: "alpha" })).toBe(
      1,
    );
  });

  it("counts a streamed request's time to first token and tokens on the responses endpoint", async () => {
    const before = await scrape();
    const stream = harness
      .openai(apiKey)
      .responses.stream({ model: "delta-4.6-sonnet", input: "Say something short" });
    const response = await stream.finalResponse();
    const after = await scrape();
    const labels = {
      gen_ai_request_model: "delta-4.6-sonnet",
      gen_ai_operation_name: "chat",
      gen_ai_provider_name: "delta",
      endpoint: "responses",
      key_kind: "personal",
    };
    const delta = (name: string, extra: Record<string, string> = {}) =>
      sampleValue(after, name, { ...labels, ...extra }) - sampleValue(before, name, { ...labels, ...extra });
    expect(delta("won_gateway_requests_total", { status: "200" })).toBe(1);
    expect(delta("gen_ai_server_time_to_first_token_seconds_count")).toBe(1);
    expect(delta("gen_ai_client_token_usage_sum", { gen_ai_token_type: "input" })).toBe(
      response.usage!.input_tokens,
    );
    expect(delta("gen_ai_client_token_usage_sum", { gen_ai_token_type: "output" })).toBe(
      response.usage!.output_tokens,
    );
    // Time per output token: observed once for a stream of more than one output token.
    expect(response.usage!.output_tokens).toBeGreaterThan(1);
    expect(delta("gen_ai_server_time_per_output_token_seconds_count")).toBe(1);
    expect(delta("gen_ai_server_time_per_output_token_seconds_sum")).toBeGreaterThanOrEqual(0);
  });

  it("labels a 400 for a served model with that model, its provider and the error type", async () => {
    const before = await scrape();
    const refused = await fetch(`${harness.baseUrl}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({
        model: "beta-3-flash",
        temperature: 9,
        messages: [{ role: "user", content: "hi" }],
      }),
    });
    expect(refused.status).toBe(400);
    const after = await scrape();
    const labels = {
      gen_ai_request_model: "beta-3-flash",
      gen_ai_operation_name: "chat",
      gen_ai_provider_name: "beta",
      endpoint: "chat.completions",
      key_kind: "personal",
      status: "400",
      error_type: "invalid_request_error",
    };
    expect(
      sampleValue(after, "won_gateway_requests_total", labels) -
        sampleValue(before, "won_gateway_requests_total", labels),
    ).toBe(1);
  });

  it("adds exactly the won the reconciler charged", async () => {
    const before = await scrape();
    await harness
      .openai(apiKey)
      .chat.completions.create({ model: "gamma-4-5", messages: [{ role: "user", content: "Price me" }] });
    let amountWon = "";
    await eventually("the usage is charged", async () => {
      const response = await admin("/billing?account=user:metrics-user");
      const rows = ((await response.json()) as { data?: { model: string; amountWon: string }[] }).data ?? [];
      const row = rows.find((candidate) => candidate.model === "gamma-4-5");
      amountWon = row?.amountWon ?? "";
      return row !== undefined;
    });
    const after = await scrape();
    const labels = { gen_ai_request_model: "gamma-4-5", key_kind: "personal" };
    expect(
      sampleValue(after, "won_gateway_charges_total", labels) -
        sampleValue(before, "won_gateway_charges_total", labels),
    ).toBe(1);
    const chargedWon =
      sampleValue(after, "won_gateway_charged_won_total", labels) -
      sampleValue(before, "won_gateway_charged_won_total", labels);
    expect(chargedWon).toBeCloseTo(Number(amountWon), 6);
    expect(Number(amountWon)).toBeGreaterThan(0);
    expect(sampleValue(after, "won_gateway_charge_lag_seconds_count")).toBeGreaterThan(0);
  });

  it("reports the charge queue's depth, the projections' lag, the holds' log lag and the pending charges' age", async () => {
    const text = await scrape();
    expect(
      samplesOf(text).some(
        (sample) => sample.name === "won_gateway_queue_depth" && sample.labels.state === "waiting",
      ),
    ).toBe(true);
    expect(sampleValue(text, "won_gateway_projection_lag_seconds")).toBeGreaterThanOrEqual(0);
    expect(samplesOf(text).some((sample) => sample.name === "won_gateway_projection_lag_seconds")).toBe(true);
    expect(sampleValue(text, "won_gateway_holds_log_lag_seconds")).toBeGreaterThanOrEqual(0);
    expect(samplesOf(text).some((sample) => sample.name === "won_gateway_holds_log_lag_seconds")).toBe(true);
    expect(sampleValue(text, "won_gateway_pending_charge_age_seconds")).toBeGreaterThanOrEqual(0);
    expect(samplesOf(text).some((sample) => sample.name === "won_gateway_pending_charge_age_seconds")).toBe(
      true,
    );
  });

  it("labels only from closed sets: never a key, user or request id; unknown models fold into one value", async () => {
    const unknownModel = `made-up-${Date.now()}`;
    const refused = await fetch(`${harness.baseUrl}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: unknownModel, messages: [{ role: "user", content: "hi" }] }),
    });
    expect(refused.status).toBe(404);
    const requestId = refused.headers.get("x-request-id")!;
    await fetch(`${harness.url}/llm/apis/${keyUuid}/status`, { method: "PATCH" });
    const text = await scrape();
    for (const secretish of [unknownModel, requestId, keyUuid, apiKey, "metrics-user"])
      expect(text).not.toContain(secretish);
    expect(
      sampleValue(text, "won_gateway_requests_total", {
        gen_ai_request_model: "unknown",
        gen_ai_provider_name: "unknown",
        endpoint: "chat.completions",
        status: "404",
        key_kind: "personal",
        error_type: "not_found_error",
      }),
    ).toBeGreaterThanOrEqual(1);
    expect(
      sampleValue(text, "won_gateway_requests_total", {
        gen_ai_request_model: "none",
        gen_ai_operation_name: "none",
        gen_ai_provider_name: "none",
        endpoint: "account",
        status: "401",
        key_kind: "none",
        error_type: "authentication_error",
      }),
    ).toBeGreaterThanOrEqual(1);

    const allowed: Record<string, Set<string>> = {
      gen_ai_request_model: new Set([...listModels().map((model) => model.slug), "unknown", "none"]),
      gen_ai_response_model: new Set([...listModels().map((model) => model.slug), "none"]),
      // The upstream metrics' model labels: the model attempted or answering, always one the catalog serves.
      model: new Set(listModels().map((model) => model.slug)),
      answering_model: new Set(listModels().map((model) => model.slug)),
      gen_ai_provider_name: new Set([...listModels().map((model) => model.family), "unknown", "none"]),
      gen_ai_operation_name: new Set(["chat", "none"]),
      error_type: new Set(errorTypeLabels),
      endpoint: new Set([
        "chat.completions",
        "responses",
        "models",
        "account",
        "admin",
        "operations",
        "other",
      ]),
      key_kind: new Set(["personal", "organization", "none"]),
      status: new Set([
        "200",
        "201",
        "400",
        "401",
        "403",
        "404",
        "429",
        "500",
        "503",
        "1xx",
        "2xx",
        "3xx",
        "4xx",
        "5xx",
        "disconnected",
      ]),
      gen_ai_token_type: new Set(["input", "output"]),
    };
    for (const sample of samplesOf(text).filter((candidate) =>
      /^(won_gateway|gen_ai)_/.test(candidate.name),
    )) {
      for (const [label, value] of Object.entries(sample.labels))
        if (allowed[label]) expect(allowed[label]!.has(value), `${sample.name} ${label}=${value}`).toBe(true);
    }
  });
});

describe("hold metrics", () => {
  it("count each outcome and keep the held amount", async () => {
    const held = async () => (await metricsRegistry.getSingleMetric("won_gateway_held_won")!.get()).values;
    const heldOf = async (keyKind: string) =>
      (await held()).find((value) => value.labels.key_kind === keyKind)?.value ?? 0;
    const start = await heldOf("organization");
    billingMetrics.observeHold({ outcome: "placed", keyKind: "organization", amountWon: "120.5" });
    billingMetrics.observeHold({ outcome: "placed", keyKind: "organization", amountWon: "30" });
    expect(await heldOf("organization")).toBeCloseTo(start + 150.5, 6);
    billingMetrics.observeHold({ outcome: "posted", keyKind: "organization", amountWon: "120.5" });
    billingMetrics.observeHold({ outcome: "voided", keyKind: "organization", amountWon: "30" });
    billingMetrics.observeHold({ outcome: "refused", keyKind: "organization", amountWon: "0" });
    expect(await heldOf("organization")).toBeCloseTo(start, 6);
    const text = await metricsRegistry.metrics();
    expect(
      sampleValue(text, "won_gateway_holds_total", { outcome: "placed", key_kind: "organization" }),
    ).toBe(2);
    expect(
      sampleValue(text, "won_gateway_holds_total", { outcome: "refused", key_kind: "organization" }),
    ).toBe(1);
  });
});

describe("access log", () => {
  it("writes one line per request with id, key preview, model, status, tokens and times, never the key", async () => {
    const response = await fetch(`${harness.baseUrl}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "zeta-mini", messages: [{ role: "user", content: "log me" }] }),
    });
    expect(response.status).toBe(200);
    const body = (await response.json()) as { usage: { prompt_tokens: number; completion_tokens: number } };
    const requestId = response.headers.get("x-request-id");
    await eventually("the line is written", async () =>
      logLines.some((line) => line.requestId === requestId),
    );
    const lines = logLines.filter((line) => line.requestId === requestId);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      msg: "request",
      method: "POST",
      path: "/llm/v1/chat/completions",
      status: 200,
      keyPreview: `svc_${apiKey.slice(4, 8)}…${apiKey.slice(-4)}`,
      model: "zeta-mini",
      inputTokens: body.usage.prompt_tokens,
      outputTokens: body.usage.completion_tokens,
      totalMs: expect.any(Number),
      overheadMs: expect.any(Number),
    });
    expect(lines[0]!.overheadMs as number).toBeLessThanOrEqual(lines[0]!.totalMs as number);
    expect(JSON.stringify(logLines)).not.toContain(apiKey);
  });

  it("logs requests outside generation too, without a key preview for a session token", async () => {
    const session = await harness.session("metrics-user");
    const response = await fetch(`${harness.url}/llm/balance`, {
      headers: { authorization: `Bearer ${session}` },
    });
    const requestId = response.headers.get("x-request-id");
    await eventually("the line is written", async () =>
      logLines.some((line) => line.requestId === requestId),
    );
    const line = logLines.find((candidate) => candidate.requestId === requestId)!;
    expect(line).toMatchObject({ path: "/llm/balance", status: 200 });
    expect(line.keyPreview).toBeUndefined();
    expect(JSON.stringify(logLines)).not.toContain(session);
  });
});

describe("worker-role listener (METRICS_PORT)", () => {
  it("serves /health/live, /health/ready and /metrics on a port of its own", async () => {
    const url = await operations.listen(0, "127.0.0.1");
    expect(await (await fetch(`${url}/health/live`)).json()).toEqual({ status: "ok" });
    expect((await fetch(`${url}/health/ready`)).status).toBe(200);
    const text = await (await fetch(`${url}/metrics`)).text();
    expect(samplesOf(text).some((sample) => sample.name === "won_gateway_requests_total")).toBe(true);
    expect((await fetch(`${url}/llm/balance`)).status).toBe(404);
  });
});
