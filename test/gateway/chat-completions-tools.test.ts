import { zodResponseFormat } from "openai/helpers/zod";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { z } from "zod";
import { estimateOutputTokens } from "../../src/gateway/generation/token-estimator";
import { timeTool, weatherTool } from "../support/chat-completions-tools";
import { type GatewayHarness, startGatewayHarness } from "../support/gateway-harness";
import { recordedUsageOf } from "../support/recorded-usage";

/**
 * The chat-completions format end to end with the official `openai` client: tools, tool turns, structured
 * output, images and the protocol's sampling parameters, through the real gateway to a chat-completions
 * upstream (alpha-5.4, served by the simulator), asserting what the upstream received and what was billed.
 */

const model = "alpha-5.4";

const question = [{ role: "user" as const, content: "What is the weather and the time in Seoul?" }];

describe("chat completions with tools, structured output, images and parameters", () => {
  let harness: GatewayHarness;
  let apiKey: string;

  beforeAll(async () => {
    harness = await startGatewayHarness({ label: "chat-tools" });
    const session = await harness.session("tess");
    apiKey = (await harness.issueKey(session)).key;
    await harness.topUp({ kind: "user", id: "tess" }, "100000");
  });
  afterAll(async () => {
    await harness?.close();
  });
  beforeEach(() => {
    harness.simulator.setFault(undefined);
    harness.simulator.clearRecordedRequests();
  });

  const upstreamBodies = () =>
    harness.simulator.recordedRequests().map((request) => request.body as Record<string, unknown>);

  it("given two tools, when runTools runs, then both are called, their results go back upstream and the text ends it", async () => {
    const called: string[] = [];
    const runner = harness.openai(apiKey).chat.completions.runTools({
      model,
      messages: question,
      tools: [
        {
          ...weatherTool,
          function: {
            ...weatherTool.function,
            parse: JSON.parse,
            function: (args: { city: string; unit: string }) => {
              called.push(`get_weather ${args.city} ${args.unit}`);
              return { celsius: 21, sky: "clear" };
            },
          },
        },
        {
          ...timeTool,
          function: {
            ...timeTool.function,
            parse: JSON.parse,
            function: (args: { city: string }) => {
              called.push(`get_time ${args.city}`);
              return "14:05";
            },
          },
        },
      ],
    });
    const finalText = await runner.finalContent();

    expect(called).toEqual([
      expect.stringMatching(/^get_weather \w+ celsius$/),
      expect.stringMatching(/^get_time \w+$/),
    ]);
    expect(finalText).toEqual(expect.any(String));
    expect(finalText!.length).toBeGreaterThan(0);
    const [first, second] = upstreamBodies();
    expect(first).toMatchObject({
      tools: [weatherTool, timeTool],
      tool_choice: "auto",
      messages: [{ role: "user", content: question[0]!.content }],
    });
    const calls = (second!.messages as { tool_calls?: { id: string }[] }[])[1]!.tool_calls!;
    expect(second!.messages).toEqual([
      { role: "user", content: question[0]!.content },
      {
        role: "assistant",
        content: null,
        tool_calls: [
          {
            id: calls[0]!.id,
            type: "function",
            function: { name: "get_weather", arguments: expect.any(String) },
          },
          {
            id: calls[1]!.id,
            type: "function",
            function: { name: "get_time", arguments: expect.any(String) },
          },
        ],
      },
      { role: "tool", tool_call_id: calls[0]!.id, content: '{"celsius":21,"sky":"clear"}' },
      { role: "tool", tool_call_id: calls[1]!.id, content: "14:05" },
    ]);
  });

  it("given a tool-call reply as JSON, then it shows the calls and is charged the upstream's token counts", async () => {
    const { data, response } = await harness
      .openai(apiKey)
      .chat.completions.create({ model, messages: question, tools: [weatherTool, timeTool] })
      .withResponse();

    expect(data.choices[0]).toMatchObject({
      finish_reason: "tool_calls",
      message: {
        role: "assistant",
        content: null,
        tool_calls: [
          { type: "function", function: { name: "get_weather" } },
          { type: "function", function: { name: "get_time" } },
        ],
      },
    });
    expect(data.id).toMatch(/^chatcmpl-\d{13}$/);
    expect(await recordedUsageOf(harness, response.headers.get("x-request-id")!)).toMatchObject({
      outcome: "completed",
      usageSource: "upstream",
      tokens: { input: data.usage!.prompt_tokens, output: data.usage!.completion_tokens },
    });
    expect(data.usage!.completion_tokens).toBeGreaterThan(0);
  });

  it("given a stream with tool calls, then stream().finalChatCompletion() accumulates the same calls as JSON", async () => {
    const request = { model, messages: question, tools: [weatherTool, timeTool] };
    const json = await harness.openai(apiKey).chat.completions.create(request);
    const argumentsDone: { name: string; arguments: string }[] = [];
    const final = await harness
      .openai(apiKey)
      .chat.completions.stream(request)
      .on("tool_calls.function.arguments.done", (event) =>
        argumentsDone.push({ name: event.name, arguments: event.arguments }),
      )
      .finalChatCompletion();

    expect(final.choices[0]!.finish_reason).toBe("tool_calls");
    expect(final.choices[0]!.message.content).toBeNull();
    // The simulated model is deterministic: ids, names and arguments match the JSON reply's.
    expect(final.choices[0]!.message.tool_calls).toEqual(json.choices[0]!.message.tool_calls);
    expect(argumentsDone.map((call) => call.name)).toEqual(["get_weather", "get_time"]);
    expect(final.usage).toEqual(json.usage);
    expect(upstreamBodies().at(-1)).toMatchObject({ stream: true, tools: [weatherTool, timeTool] });
  });

  it("given a stream cut while a call's arguments stream, then the estimated usage counts the arguments sent", async () => {
    harness.simulator.setFault({ kind: "break-stream", afterDeltas: 2, mode: "error-event" });
    const response = await fetch(`${harness.baseUrl}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model, messages: question, tools: [weatherTool], stream: true }),
    });
    const frames = (await response.text()).split("\n\n").filter(Boolean);
    expect(frames.at(-1)).toBe("data: [DONE]");
    expect(JSON.parse(frames.at(-2)!.slice("data: ".length))).toMatchObject({ status: 300 });
    const chunks = frames.slice(0, -2).map((frame) => JSON.parse(frame.slice("data: ".length)));
    const deltas = chunks.flatMap((chunk) => chunk.choices[0].delta.tool_calls ?? []);
    expect(deltas[0]).toMatchObject({
      index: 0,
      type: "function",
      function: { name: "get_weather", arguments: "" },
    });
    const sentArguments = deltas
      .map((delta: { function: { arguments: string } }) => delta.function.arguments)
      .join("");
    expect(sentArguments.length).toBeGreaterThan(0);

    const usage = await recordedUsageOf(harness, response.headers.get("x-request-id")!);
    expect(usage).toMatchObject({ outcome: "upstream-failed", usageSource: "estimated" });
    expect(usage!.tokens.output).toBe(
      estimateOutputTokens("", [{ id: deltas[0].id, name: "get_weather", arguments: sentArguments }]),
    );
    expect(usage!.tokens.output).toBeGreaterThan(
      estimateOutputTokens("", [{ id: "", name: "get_weather", arguments: "" }]),
    );
  });

  it("given a json_schema response_format, then the text is JSON valid for the schema, and parse() reads it with zod", async () => {
    const forecast = z.object({
      city: z.string(),
      celsius: z.number(),
      sunny: z.boolean(),
      hours: z.array(z.number().int()),
    });
    const completion = await harness.openai(apiKey).chat.completions.parse({
      model,
      messages: question,
      response_format: zodResponseFormat(forecast, "forecast"),
    });
    const parsed = completion.choices[0]!.message.parsed;
    expect(forecast.parse(parsed)).toEqual(parsed);
    expect(upstreamBodies().at(-1)!.response_format).toMatchObject({
      type: "json_schema",
      json_schema: {
        name: "forecast",
        strict: true,
        schema: { type: "object", required: ["city", "celsius", "sunny", "hours"] },
      },
    });

    const jsonObject = await harness.openai(apiKey).chat.completions.create({
      model,
      messages: question,
      response_format: { type: "json_object" },
    });
    expect(JSON.parse(jsonObject.choices[0]!.message.content!)).toEqual(expect.any(Object));
  });

  it("given a data URL and an https URL image, then both arrive upstream as image_url parts", async () => {
    const dataUrl =
      "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
    const content = [
      { type: "text" as const, text: "What do these show?" },
      { type: "image_url" as const, image_url: { url: dataUrl, detail: "low" as const } },
      { type: "image_url" as const, image_url: { url: "https://images.example/harbor.jpg" } },
    ];
    const completion = await harness
      .openai(apiKey)
      .chat.completions.create({ model, messages: [{ role: "user", content }] });

    expect(upstreamBodies().at(-1)!.messages).toEqual([{ role: "user", content }]);
    const textOnly = await harness.openai(apiKey).chat.completions.create({
      model,
      messages: [{ role: "user", content: [content[0]!] }],
    });
    // The upstream's own count of the two images (the simulator's flat 85 each) is what the client sees.
    expect(completion.usage!.prompt_tokens - textOnly.usage!.prompt_tokens).toBe(170);
  });

  it("given stop, seed, penalties, reasoning_effort and user, then each reaches the upstream by its name", async () => {
    await harness.openai(apiKey).chat.completions.create({
      model,
      messages: question,
      stop: "\n\n",
      seed: 7,
      presence_penalty: 0.4,
      frequency_penalty: -0.3,
      reasoning_effort: "minimal",
      user: "end-user-17",
      max_completion_tokens: 64,
    });
    expect(upstreamBodies().at(-1)).toEqual({
      model: "alpha-5.4",
      messages: question,
      stop: ["\n\n"],
      seed: 7,
      presence_penalty: 0.4,
      frequency_penalty: -0.3,
      reasoning_effort: "minimal",
      user: "end-user-17",
      max_completion_tokens: 64,
    });
  });

  it("given metadata, then 400/100 naming it before any hold, where the upstream would refuse it without store", async () => {
    const sent = upstreamBodies().length;
    const refused = harness.openai(apiKey).chat.completions.create({
      model,
      messages: question,
      metadata: { team: "search", ticket: "4312" },
    });
    await expect(refused).rejects.toMatchObject({
      status: 400,
      error: { code: 100, message: `metadata: not supported by ${model}` },
    });
    expect(upstreamBodies()).toHaveLength(sent);
  });

  it.each<[string, Record<string, unknown>]>([
    ["n: must be 1", { n: 2 }],
    ["logprobs: not supported", { logprobs: true }],
    ["top_logprobs: not supported", { top_logprobs: 2 }],
    ["audio: not supported", { audio: { voice: "alloy", format: "wav" } }],
    ['modalities.1: must be "text"', { modalities: ["text", "audio"] }],
    ["prediction: not supported", { prediction: { type: "content", content: "x" } }],
    ["logit_bias: not supported", { logit_bias: { "1234": 5 } }],
    ["web_search_options: not supported", { web_search_options: {} }],
    ["store: not supported", { store: true }],
    ["functions: not supported", { functions: [{ name: "f", parameters: {} }] }],
    ["function_call: not supported", { function_call: "auto" }],
    ['service_tier: must be "auto" or absent', { service_tier: "priority" }],
  ])("refuses %s with 400/100 before any upstream call", async (message, fields) => {
    const response = await fetch(`${harness.baseUrl}/chat/completions`, {
      method: "POST",
      headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
      body: JSON.stringify({ model, messages: question, ...fields }),
    });
    expect(response.status).toBe(400);
    const body = (await response.json()) as { status: number; message: string };
    expect(body.status).toBe(100);
    expect(body.message.startsWith(message)).toBe(true);
    expect(harness.simulator.recordedRequests()).toHaveLength(0);
  });
});
