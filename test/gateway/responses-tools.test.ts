import type OpenAI from "openai";
import { zodTextFormat } from "openai/helpers/zod";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { type GatewayHarness, startGatewayHarness } from "../support/gateway-harness";
import { recordedUsageOf } from "../support/recorded-usage";

/**
 * The responses format's tools, structured output, images and parameters, end to end: the official `openai`
 * client against the running gateway, alpha-5.4-pro served by the simulator over the responses protocol.
 */

const model = "alpha-5.4-pro";
const weatherTool = {
  type: "function" as const,
  name: "get_weather",
  description: "The weather in a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  strict: false,
};
const timeTool = { ...weatherTool, name: "get_time", parameters: { type: "object", properties: {} } };

describe("the responses format with tools, structured output and images", () => {
  let harness: GatewayHarness;
  let apiKey: string;
  let client: OpenAI;

  beforeAll(async () => {
    harness = await startGatewayHarness({ label: "responses-tools" });
    const session = await harness.session("dana");
    apiKey = (await harness.issueKey(session)).key;
    await harness.topUp({ kind: "user", id: "dana" }, "100000");
    client = harness.openai(apiKey);
  });
  afterAll(async () => {
    await harness?.close();
  });
  beforeEach(() => {
    harness.simulator.setFault(undefined);
    harness.simulator.clearRecordedRequests();
  });

  it("given function tools, then the reply is function_call items charged at the upstream's counts, and their outputs get an answer", async () => {
    const { data: first, response } = await client.responses
      .create({ model, input: "Weather and time in Seoul?", tools: [weatherTool, timeTool] })
      .withResponse();

    expect(first.status).toBe("completed");
    expect(first.output_text).toBe("");
    expect(first.output).toEqual([
      {
        type: "function_call",
        id: `${first.id}-fc0`,
        call_id: expect.stringMatching(/^call_/),
        name: "get_weather",
        arguments: expect.stringMatching(/^\{"city":"\w+"\}$/),
        status: "completed",
      },
      {
        type: "function_call",
        id: `${first.id}-fc1`,
        call_id: expect.stringMatching(/^call_/),
        name: "get_time",
        arguments: "{}",
        status: "completed",
      },
    ]);
    expect(harness.simulator.lastRequest()!.body).toMatchObject({
      tools: [
        { type: "function", name: "get_weather", parameters: weatherTool.parameters, strict: false },
        { type: "function", name: "get_time" },
      ],
    });
    expect(await recordedUsageOf(harness, response.headers.get("x-request-id")!)).toMatchObject({
      outcome: "completed",
      usageSource: "upstream",
      endpoint: "responses",
      tokens: { input: first.usage!.input_tokens, output: first.usage!.output_tokens },
    });
    expect(first.usage!.output_tokens).toBeGreaterThan(0);

    // The client's tool loop: the calls as they came, then one output per call.
    const calls = first.output.flatMap((item) => (item.type === "function_call" ? [item] : []));
    const outputs = calls.map((call) => ({
      type: "function_call_output" as const,
      call_id: call.call_id,
      output: `${call.name}: fine`,
    }));
    const second = await client.responses.create({
      model,
      input: [{ role: "user", content: "Weather and time in Seoul?" }, ...calls, ...outputs],
      tools: [weatherTool, timeTool],
    });
    expect(second.output).toEqual([expect.objectContaining({ type: "message", id: `${second.id}-msg` })]);
    expect(second.output_text.length).toBeGreaterThan(0);
    const upstreamInput = (harness.simulator.lastRequest()!.body as { input: unknown[] }).input;
    expect(upstreamInput.slice(1)).toEqual([
      {
        type: "function_call",
        call_id: outputs[0]!.call_id,
        name: "get_weather",
        arguments: expect.any(String),
      },
      { type: "function_call", call_id: outputs[1]!.call_id, name: "get_time", arguments: "{}" },
      { type: "function_call_output", call_id: outputs[0]!.call_id, output: "get_weather: fine" },
      { type: "function_call_output", call_id: outputs[1]!.call_id, output: "get_time: fine" },
    ]);
  });

  it("given a stream with tools, then responses.stream() accumulates the calls and finalResponse() carries them", async () => {
    const stream = client.responses.stream({
      model,
      input: "Weather and time?",
      tools: [weatherTool, timeTool],
      tool_choice: "required",
    });
    const events: { type: string; sequence_number: number; output_index?: number }[] = [];
    stream.on("event", (event) => events.push(event));
    const final = await stream.finalResponse();

    expect(final.output.map((item) => item.type === "function_call" && [item.id, item.name])).toEqual([
      [`${final.id}-fc0`, "get_weather"],
      [`${final.id}-fc1`, "get_time"],
    ]);
    const weather = final.output[0]!;
    expect(weather.type === "function_call" && JSON.parse(weather.arguments)).toEqual({
      city: expect.any(String),
    });
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
    const types = events.map((event) => event.type);
    expect(types.slice(0, 3)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
    ]);
    expect(types).toContain("response.function_call_arguments.delta");
    expect(types.filter((type) => type === "response.function_call_arguments.done")).toHaveLength(2);
    expect(types.at(-1)).toBe("response.completed");
    expect(harness.simulator.lastRequest()!.body).toMatchObject({ stream: true, tool_choice: "required" });
  });

  it("given a json_schema text format, then the text is JSON valid for the schema, and responses.parse reads it", async () => {
    const schema = {
      type: "object",
      properties: { city: { type: "string" }, rainy: { type: "boolean" } },
      required: ["city", "rainy"],
      additionalProperties: false,
    };
    const response = await client.responses.create({
      model,
      input: "Describe the weather",
      text: { format: { type: "json_schema", name: "weather", schema, strict: true } },
    });
    expect(JSON.parse(response.output_text)).toEqual({ city: expect.any(String), rainy: true });
    expect(harness.simulator.lastRequest()!.body).toMatchObject({
      text: { format: { type: "json_schema", name: "weather", schema, strict: true } },
    });

    const parsed = await client.responses.parse({
      model,
      input: "Describe the weather",
      text: { format: zodTextFormat(z.object({ city: z.string(), rainy: z.boolean() }), "weather") },
    });
    expect(parsed.output_parsed).toEqual({ city: expect.any(String), rainy: true });
  });

  it("given input_image parts by data URL and https URL, then both reach the upstream as input_image", async () => {
    const dataUrl = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUg==";
    const response = await client.responses.create({
      model,
      input: [
        {
          role: "user",
          content: [
            { type: "input_text", text: "Compare these" },
            { type: "input_image", image_url: dataUrl, detail: "low" },
            { type: "input_image", image_url: "https://example.com/river.png", detail: "auto" },
          ],
        },
      ],
    });
    expect(response.output_text.length).toBeGreaterThan(0);
    expect(harness.simulator.lastRequest()!.body).toMatchObject({
      input: [
        {
          role: "user",
          content: [
            { type: "input_text", text: "Compare these" },
            { type: "input_image", image_url: dataUrl, detail: "low" },
            { type: "input_image", image_url: "https://example.com/river.png", detail: "auto" },
          ],
        },
      ],
    });
  });

  it("given reasoning effort, metadata and the end user, then they reach the upstream in the protocol's words", async () => {
    await client.responses.create({
      model,
      input: "Hi",
      reasoning: { effort: "low" },
      metadata: { team: "search" },
      safety_identifier: "user-42",
      tools: [weatherTool],
      parallel_tool_calls: false,
      store: false,
    });
    const body = harness.simulator.lastRequest()!.body as Record<string, unknown>;
    expect(body).toMatchObject({
      reasoning: { effort: "low" },
      metadata: { team: "search" },
      safety_identifier: "user-42",
      parallel_tool_calls: false,
      store: false,
    });

    await client.responses.create({ model, input: "Hi", user: "user-7" });
    expect(harness.simulator.lastRequest()!.body).toMatchObject({ safety_identifier: "user-7" });
  });

  it.each([
    ["responses", model],
    ["chat-completions", "alpha-5.4-mini"],
  ])(
    "given tool_choice and parallel_tool_calls but no tools, then a %s upstream is asked without them, as chat completions asks",
    async (_protocol, served) => {
      const reply = await client.responses.create({
        model: served,
        input: "Hi",
        tool_choice: "none",
        parallel_tool_calls: false,
      });
      expect(reply.status).toBe("completed");
      const body = harness.simulator.lastRequest()!.body as Record<string, unknown>;
      expect(body).not.toHaveProperty("tool_choice");
      expect(body).not.toHaveProperty("parallel_tool_calls");
    },
  );

  it.each<[string, Record<string, unknown>, string]>([
    ["previous_response_id", { previous_response_id: "resp_1" }, "previous_response_id: not supported"],
    ["conversation", { conversation: "conv_1" }, "conversation: not supported"],
    ["store: true", { store: true }, "store: must be false or absent"],
    ["background: true", { background: true }, "background: must be false or absent"],
    ["prompt", { prompt: { id: "pmpt_1" } }, "prompt: not supported"],
    ["top_logprobs", { top_logprobs: 3 }, "top_logprobs: not supported"],
    ["include", { include: ["message.output_text.logprobs"] }, "include: must be empty"],
    ["a hosted tool", { tools: [{ type: "web_search" }] }, 'tools.0.type: must be "function"'],
    ["reasoning.summary", { reasoning: { summary: "auto" } }, "reasoning.summary: not supported"],
    [
      "an image by file id",
      { input: [{ role: "user", content: [{ type: "input_image", file_id: "f" }] }] },
      "input.0.content.0.file_id",
    ],
    [
      "a reasoning item",
      { input: [{ type: "reasoning", id: "rs_1", summary: [] }] },
      "input.0.type: reasoning items",
    ],
    ["a chat-completions field", { max_tokens: 5 }, "max_tokens: is not a parameter of the responses format"],
  ])("given %s, then 400/100 names the field before any upstream call", async (_case, fields, message) => {
    const response = await fetch(`${harness.baseUrl}/responses`, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model, input: "Hi", ...fields }),
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { status: number; message: string };
    expect(body.status).toBe(100);
    expect(body.message.startsWith(message)).toBe(true);
    expect(harness.simulator.recordedRequests()).toHaveLength(0);
  });
});
