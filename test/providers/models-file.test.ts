import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { findModel, installModels, listModels } from "../../src/providers/catalog";
import { loadModelsFile } from "../../src/providers/models-file";
import { type Simulator, startSimulator } from "../../src/providers/simulator/simulator";
import { type GatewayHarness, startGatewayHarness, testSecrets } from "../support/gateway-harness";

/**
 * MODELS_FILE: a model added without code, served end to end through a fake upstream of its own; a built-in
 * model's upstream id replaced; every mistake in the file refused with one line naming the field.
 */

let directory: string;
const environment = { ACME_TEST_API_KEY: "acme-upstream-secret" };

beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), "models-file-"));
});
afterAll(async () => {
  await rm(directory, { recursive: true, force: true });
});

async function fileWith(name: string, text: string): Promise<string> {
  const path = join(directory, name);
  await writeFile(path, text);
  return path;
}

describe("loading a models file", () => {
  it.each([
    [
      "an unknown field",
      "models:\n  x-1:\n    family: alpha\n    protocol: responses\n    prise: {}\n",
      "models.x-1",
    ],
    [
      "an unknown protocol",
      "models:\n  x-1:\n    family: alpha\n    protocol: grpc\n",
      "models.x-1.protocol",
    ],
    [
      "a new model without prices",
      "models:\n  x-1:\n    family: alpha\n    protocol: responses\n",
      "models.x-1.prices is required",
    ],
    [
      "a price as a number",
      "models:\n  x-1:\n    family: alpha\n    protocol: responses\n    prices: { inputUsdPer1M: 1, outputUsdPer1M: '2' }\n",
      "models.x-1.prices.inputUsdPer1M must be a decimal string",
    ],
    [
      "a key variable that is not set",
      "models:\n  x-1:\n    family: alpha\n    protocol: responses\n    baseUrl: https://x.example/v1\n    apiKeyVariable: NOT_SET_ANYWHERE\n    prices: { inputUsdPer1M: '1', outputUsdPer1M: '2' }\n",
      "NOT_SET_ANYWHERE is not set",
    ],
    [
      "a negative price",
      "models:\n  x-1:\n    family: alpha\n    protocol: responses\n    prices: { inputUsdPer1M: '-1', outputUsdPer1M: '2' }\n",
      "models.x-1.prices.inputUsdPer1M must be ≥ 0, below 1000000, at most 10 decimals",
    ],
    [
      "a price of a million dollars",
      "models:\n  alpha-5.4:\n    family: alpha\n    protocol: chat-completions\n    prices: { inputUsdPer1M: '1', outputUsdPer1M: '1000000' }\n",
      "models.alpha-5.4.prices.outputUsdPer1M must be ≥ 0, below 1000000, at most 10 decimals",
    ],
    [
      "a price of more than 10 decimals",
      "models:\n  x-1:\n    family: alpha\n    protocol: responses\n    prices: { inputUsdPer1M: '1', outputUsdPer1M: '2', cachedInputUsdPer1M: '0.00000000001' }\n",
      "models.x-1.prices.cachedInputUsdPer1M must be ≥ 0, below 1000000, at most 10 decimals",
    ],
    ["text that is not YAML", "models: [unclosed", "is not YAML or JSON"],
    [
      "endpoints beside a baseUrl",
      "models:\n  alpha-5.4:\n    family: alpha\n    protocol: chat-completions\n    baseUrl: https://x.example/v1\n    apiKeyVariable: ACME_TEST_API_KEY\n    endpoints: [{ name: east, baseUrl: https://east.example/v1, apiKeyVariable: ACME_TEST_API_KEY }]\n",
      "give either endpoints or baseUrl/apiKeyVariable",
    ],
    [
      "an endpoint whose key variable is not set",
      "models:\n  alpha-5.4:\n    family: alpha\n    protocol: chat-completions\n    endpoints: [{ name: east, baseUrl: https://east.example/v1, apiKeyVariable: NOT_SET_ANYWHERE }]\n",
      "models.alpha-5.4.endpoints.0: the environment variable NOT_SET_ANYWHERE is not set",
    ],
    [
      "an endpoint name that is not a label",
      "models:\n  alpha-5.4:\n    family: alpha\n    protocol: chat-completions\n    endpoints: [{ name: 'East Coast', baseUrl: https://east.example/v1, apiKeyVariable: ACME_TEST_API_KEY }]\n",
      "models.alpha-5.4.endpoints.0.name must be lowercase",
    ],
    [
      "one endpoint name for two upstreams",
      "models:\n  alpha-5.4:\n    family: alpha\n    protocol: chat-completions\n    endpoints: [{ name: east, baseUrl: https://east.example/v1, apiKeyVariable: ACME_TEST_API_KEY }]\n  alpha-5.5:\n    family: alpha\n    protocol: chat-completions\n    endpoints: [{ name: east, baseUrl: https://west.example/v1, apiKeyVariable: ACME_TEST_API_KEY }]\n",
      "endpoint east differs from another of that name",
    ],
    [
      "a fallback that is no model",
      "models:\n  alpha-5.4:\n    family: alpha\n    protocol: chat-completions\n    fallbacks: [alpha-9]\n",
      "models.alpha-5.4.fallbacks names alpha-9, which is no model",
    ],
    [
      "a model falling back to itself",
      "models:\n  alpha-5.4:\n    family: alpha\n    protocol: chat-completions\n    fallbacks: [alpha-5.4]\n",
      "models.alpha-5.4.fallbacks names the model itself",
    ],
  ])("refuses %s with one line naming it", async (_case, text, expected) => {
    const path = await fileWith(`bad-${Math.random().toString(36).slice(2)}.yaml`, text);
    const failure = await loadModelsFile(path, environment).catch((error: Error) => error);
    expect(failure).toBeInstanceOf(Error);
    const message = (failure as Error).message;
    expect(message).toContain(`MODELS_FILE ${path}`);
    expect(message).toContain(expected);
    expect(message).not.toContain("\n");
  });

  it("reads JSON as well, and keeps a built-in model's fields that the file does not give", async () => {
    const path = await fileWith(
      "models.json",
      JSON.stringify({
        models: { "alpha-5.5": { family: "alpha", protocol: "responses", upstreamModelId: "a-55" } },
      }),
    );
    const [model] = await loadModelsFile(path, environment);
    expect(model).toMatchObject({
      slug: "alpha-5.5",
      protocol: "responses",
      upstreamModelId: "a-55",
      // The built-in catalog's price, in money's one form.
      inputUsdPerMillionTokens: "2.5",
      ignoredParameters: ["temperature", "top_p"],
    });
    expect(model!.upstream).toBeUndefined();
  });

  it("reads several endpoints of a model (weight 1 by default) and its fallbacks", async () => {
    const path = await fileWith(
      "endpoints.yaml",
      [
        "models:",
        "  delta-4.6-sonnet:",
        "    family: delta",
        "    protocol: messages",
        "    fallbacks: [delta-4.5-haiku, acme-chat-2]",
        "    endpoints:",
        "      - { name: delta-us, baseUrl: https://us.example, apiKeyVariable: ACME_TEST_API_KEY, weight: 3, concurrentRequestsMax: 50 }",
        "      - { name: delta-eu, baseUrl: https://eu.example, apiKeyVariable: ACME_TEST_API_KEY, upstreamModelId: sonnet-eu }",
        "  acme-chat-2:",
        "    family: gamma",
        "    protocol: chat-completions",
        "    prices: { inputUsdPer1M: '1.50', outputUsdPer1M: '2.000' }",
        "",
      ].join("\n"),
    );
    const [sonnet, acme] = await loadModelsFile(path, environment);
    // Prices are kept in money's one form, as an admin's are.
    expect(acme).toMatchObject({
      inputUsdPerMillionTokens: "1.5",
      outputUsdPerMillionTokens: "2",
      cachedInputUsdPerMillionTokens: "1.5",
    });
    expect(sonnet).toMatchObject({
      slug: "delta-4.6-sonnet",
      fallbacks: ["delta-4.5-haiku", "acme-chat-2"],
      endpoints: [
        {
          name: "delta-us",
          baseUrl: "https://us.example",
          apiKeyVariable: "ACME_TEST_API_KEY",
          weight: 3,
          concurrentRequestsMax: 50,
        },
        {
          name: "delta-eu",
          baseUrl: "https://eu.example",
          apiKeyVariable: "ACME_TEST_API_KEY",
          weight: 1,
          upstreamModelId: "sonnet-eu",
        },
      ],
    });
    // The key is named by its variable, never held in the catalog.
    expect(JSON.stringify(sonnet)).not.toContain(environment.ACME_TEST_API_KEY);
  });
});

describe("a models file served end to end", () => {
  let harness: GatewayHarness;
  let acmeUpstream: Simulator;
  let apiKey: string;

  beforeAll(async () => {
    acmeUpstream = await startSimulator();
    const path = await fileWith(
      "models.yaml",
      [
        "models:",
        "  acme-chat-1:",
        "    family: gamma",
        "    protocol: chat-completions",
        "    upstreamModelId: acme/chat-1-2026",
        `    baseUrl: ${acmeUpstream.url}`,
        "    apiKeyVariable: ACME_TEST_API_KEY",
        "    prices: { inputUsdPer1M: '0.40', outputUsdPer1M: '1.60' }",
        "    maxOutputTokens: 100",
        "    ignoredParameters: [top_p]",
        "  delta-4.6-sonnet:",
        "    family: delta",
        "    protocol: messages",
        "    upstreamModelId: delta-sonnet-20260101",
        "",
      ].join("\n"),
    );
    installModels(await loadModelsFile(path, environment));
    const acme = findModel("acme-chat-1")!;
    harness = await startGatewayHarness({
      label: "models_file",
      billing: {},
      service: {
        adminToken: testSecrets.adminToken,
        modelUpstreams: new Map([
          ["acme-chat-1", { baseUrl: acme.upstream!.baseUrl, apiKey: environment.ACME_TEST_API_KEY }],
        ]),
      },
    });
    const session = await harness.session("acme-user");
    apiKey = (await harness.issueKey(session)).key;
    await harness.topUp({ kind: "user", id: "acme-user" }, "1000");
  }, 60_000);
  afterAll(async () => {
    await harness?.close();
    await acmeUpstream?.close();
  });

  it("lists the added model after the built-in ones", async () => {
    const models = await harness.openai(apiKey).models.list();
    const ids = models.data.map((model) => model.id);
    expect(ids).toHaveLength(24);
    expect(ids.at(-1)).toBe("acme-chat-1");
    expect(listModels()).toHaveLength(24);
  });

  it("sends the added model to its own upstream under its upstream id and key", async () => {
    const completion = await harness.openai(apiKey).chat.completions.create({
      model: "acme-chat-1",
      messages: [{ role: "user", content: "Hello acme" }],
      top_p: 0.5,
      max_tokens: 50,
    });
    expect(completion.model).toBe("acme-chat-1");
    expect(completion.choices[0]!.message.content).not.toBe("");
    const sent = acmeUpstream.lastRequest()!;
    expect(sent.path).toBe("/chat/completions");
    expect(sent.headers.authorization).toBe("Bearer acme-upstream-secret");
    expect(sent.body).toMatchObject({ model: "acme/chat-1-2026", max_completion_tokens: 50 });
    expect(sent.body).not.toHaveProperty("top_p");
    expect(
      harness.simulator.recordedRequests().some((request) => JSON.stringify(request.body).includes("acme")),
    ).toBe(false);
  });

  it("given a stream in either format, then every chunk and every response names the model as asked, never its upstream id", async () => {
    const client = harness.openai(apiKey);
    const chunks = await client.chat.completions.create({
      model: "acme-chat-1",
      messages: [{ role: "user", content: "Hello acme" }],
      stream: true,
    });
    const chunkModels: string[] = [];
    for await (const chunk of chunks) chunkModels.push(chunk.model);
    expect(chunkModels.length).toBeGreaterThan(1);
    expect(new Set(chunkModels)).toEqual(new Set(["acme-chat-1"]));

    const events = await client.responses.create({ model: "acme-chat-1", input: "Hello acme", stream: true });
    const responseModels: [string, string][] = [];
    for await (const event of events)
      if ("response" in event) responseModels.push([event.type, event.response.model]);
    expect(responseModels).toEqual([
      ["response.created", "acme-chat-1"],
      ["response.in_progress", "acme-chat-1"],
      ["response.completed", "acme-chat-1"],
    ]);
  });

  it("refuses more output than the model's cap with 400/100", async () => {
    const response = await fetch(`${harness.baseUrl}/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model: "acme-chat-1", input: "hi", max_output_tokens: 101 }),
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({
      status: 100,
      message: expect.stringContaining("at most 100"),
    });
  });

  it("prices the added model from the file until an admin sets a price", async () => {
    const prices = (await (
      await fetch(`${harness.url}/admin/prices`, {
        headers: { authorization: `Bearer ${testSecrets.adminToken}` },
      })
    ).json()) as { data: { model: string }[] };
    expect(prices.data.find((price) => price.model === "acme-chat-1")).toMatchObject({
      inputUsdPer1M: "0.4",
      outputUsdPer1M: "1.6",
      cachedInputUsdPer1M: "0.4",
    });
  });

  it("sends a built-in model under the upstream id the file gives it", async () => {
    await harness.openai(apiKey).chat.completions.create({
      model: "delta-4.6-sonnet",
      messages: [{ role: "user", content: "Hello delta" }],
    });
    const sent = harness.simulator.lastRequest()!;
    expect(sent.path).toBe("/v1/messages");
    expect(sent.body).toMatchObject({ model: "delta-sonnet-20260101" });
  });
});
