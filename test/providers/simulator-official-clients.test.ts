import Anthropic from "@anthropic-ai/sdk";
import { GoogleGenAI } from "@google/genai";
import { countTokens } from "gpt-tokenizer";
import OpenAI from "openai";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { simulateCompletion } from "../../src/providers/simulator/simulated-completion";
import { type Simulator, startSimulator } from "../../src/providers/simulator/simulator";

/**
 * The simulator checked with each protocol's own official client: if the fake drifted from the real wire
 * format, these clients (not our adapters, which could share the same misunderstanding) would fail.
 */

const system = "You answer in one paragraph.";
const question = "Why do rivers bend?";
/** The simulated answer depends only on the prompt, so every protocol must return this text. */
const expected = simulateCompletion(
  [
    { role: "system", text: system },
    { role: "user", text: question },
  ],
  undefined,
);
const expectedPromptTokens = 3 + (3 + countTokens(system)) + (3 + countTokens(question));

let simulator: Simulator;

beforeAll(async () => {
  simulator = await startSimulator();
});
afterAll(() => simulator.close());
beforeEach(() => simulator.setFault(undefined));

describe("openai client against the simulator", () => {
  const client = () => new OpenAI({ apiKey: "test-key", baseURL: `${simulator.url}/v1`, maxRetries: 0 });
  const messages = [
    { role: "system" as const, content: system },
    { role: "user" as const, content: question },
  ];

  it("chat.completions.create returns the text, finish reason and usage", async () => {
    const completion = await client().chat.completions.create({ model: "alpha-5.4", messages });
    expect(completion.choices[0]?.message.content).toBe(expected.text);
    expect(completion.choices[0]?.finish_reason).toBe("stop");
    expect(completion.usage).toMatchObject({
      prompt_tokens: expectedPromptTokens,
      completion_tokens: countTokens(expected.text),
      total_tokens: expectedPromptTokens + countTokens(expected.text),
      prompt_tokens_details: { cached_tokens: 0 },
      completion_tokens_details: { reasoning_tokens: 0 },
    });
  });

  it("chat.completions.create with stream and include_usage ends with one usage chunk", async () => {
    const stream = await client().chat.completions.create({
      model: "alpha-5.4",
      messages,
      stream: true,
      stream_options: { include_usage: true },
    });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    expect(chunks[0]?.choices[0]?.delta.role).toBe("assistant");
    expect(chunks.map((chunk) => chunk.choices[0]?.delta.content ?? "").join("")).toBe(expected.text);
    expect(chunks.at(-2)?.choices[0]?.finish_reason).toBe("stop");
    expect(chunks.at(-1)?.choices).toEqual([]);
    expect(chunks.at(-1)?.usage?.completion_tokens).toBe(expected.outputTokens);
    expect(chunks.slice(0, -1).every((chunk) => chunk.usage === null)).toBe(true);
  });

  it("chat.completions.stream().finalChatCompletion() assembles the streamed answer", async () => {
    const final = await client()
      .chat.completions.stream({ model: "alpha-5.4", messages, stream_options: { include_usage: true } })
      .finalChatCompletion();
    expect(final.choices[0]?.message.content).toBe(expected.text);
    expect(final.usage?.prompt_tokens).toBe(expectedPromptTokens);
  });

  it("responses.create returns output_text and usage", async () => {
    const response = await client().responses.create({
      model: "alpha-5.4-pro",
      instructions: system,
      input: question,
    });
    expect(response.status).toBe("completed");
    expect(response.output_text).toBe(expected.text);
    expect(response.usage).toMatchObject({
      input_tokens: expectedPromptTokens,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: expected.outputTokens,
      output_tokens_details: { reasoning_tokens: 0 },
    });
  });

  it("responses.create with stream emits the documented event sequence with sequence numbers", async () => {
    const stream = await client().responses.create({
      model: "alpha-5.4-pro",
      instructions: system,
      input: question,
      stream: true,
    });
    const events = [];
    for await (const event of stream) events.push(event);
    const types = [...new Set(events.map((event) => event.type))];
    expect(types).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);
    expect(events.map((event) => event.sequence_number)).toEqual(events.map((_, index) => index));
    const completed = events.at(-1);
    expect(completed?.type === "response.completed" && completed.response.usage?.output_tokens).toBe(
      expected.outputTokens,
    );
  });

  it("responses.stream().finalResponse() assembles the streamed answer", async () => {
    const final = await client()
      .responses.stream({ model: "alpha-5.4-pro", instructions: system, input: question })
      .finalResponse();
    expect(final.output_text).toBe(expected.text);
  });

  const weatherTool = {
    type: "function" as const,
    name: "get_weather",
    description: "The weather in a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
    strict: false,
  };

  it("responses.create with a function tool returns a function_call item, then answers its output", async () => {
    const first = await client().responses.create({
      model: "alpha-5.4-pro",
      input: question,
      tools: [weatherTool],
    });
    expect(first.output).toEqual([
      {
        id: expect.stringMatching(/^fc_/),
        type: "function_call",
        status: "completed",
        arguments: expect.stringMatching(/^\{"city":"\w+"\}$/),
        call_id: expect.stringMatching(/^call_/),
        name: "get_weather",
      },
    ]);
    expect(first.output_text).toBe("");
    const call = first.output[0]!;
    if (call.type !== "function_call") throw new Error("expected a function call");
    const second = await client().responses.create({
      model: "alpha-5.4-pro",
      input: [
        { role: "user", content: question },
        call,
        { type: "function_call_output", call_id: call.call_id, output: "Sunny" },
      ],
      tools: [weatherTool],
    });
    expect(second.output).toEqual([expect.objectContaining({ type: "message", role: "assistant" })]);
    expect(second.output_text.length).toBeGreaterThan(0);
  });

  it("responses.create with an output answering no call is refused with 400, as the real API does", async () => {
    await expect(
      client().responses.create({
        model: "alpha-5.4-pro",
        input: [{ type: "function_call_output", call_id: "call_missing", output: "Sunny" }],
      }),
    ).rejects.toMatchObject({ status: 400, message: expect.stringContaining("call_missing") });
  });

  it("responses.stream() accumulates streamed function calls in finalResponse()", async () => {
    const timeTool = { ...weatherTool, name: "get_time", parameters: { type: "object", properties: {} } };
    const stream = client().responses.stream({
      model: "alpha-5.4-pro",
      input: question,
      tools: [weatherTool, timeTool],
    });
    const argumentDeltas: string[] = [];
    stream.on("response.function_call_arguments.delta", (event) => argumentDeltas.push(event.delta));
    const final = await stream.finalResponse();
    const calls = final.output.map((item) =>
      item.type === "function_call" ? [item.name, item.arguments] : [],
    );
    expect(calls).toEqual([
      ["get_weather", expect.stringMatching(/^\{"city":"\w+"\}$/)],
      ["get_time", "{}"],
    ]);
    expect(argumentDeltas.join("")).toBe(calls.map((call) => call[1]).join(""));
  });

  it("responses.parse with a json_schema text format returns JSON valid for the schema", async () => {
    const response = await client().responses.create({
      model: "alpha-5.4-pro",
      input: question,
      text: {
        format: {
          type: "json_schema",
          name: "reason",
          schema: {
            type: "object",
            properties: { cause: { type: "string" }, strength: { type: "integer" } },
          },
        },
      },
    });
    expect(JSON.parse(response.output_text)).toEqual({
      cause: expect.any(String),
      strength: expect.any(Number),
    });
  });

  it("reads a simulated refusal where the protocol puts one: message.refusal, and a responses refusal part", async () => {
    simulator.setFault({ kind: "refuse" });
    const completion = await client().chat.completions.create({ model: "alpha-5.4", messages });
    expect(completion.choices[0]!.message).toMatchObject({ content: null, refusal: expected.text });
    const streamed = await client()
      .chat.completions.stream({ model: "alpha-5.4", messages })
      .finalChatCompletion();
    expect(streamed.choices[0]!.message).toMatchObject({ content: null, refusal: expected.text });
    const response = await client().responses.create({
      model: "alpha-5.4-pro",
      instructions: system,
      input: question,
    });
    expect(response.output[0]).toMatchObject({ content: [{ type: "refusal", refusal: expected.text }] });
    const final = await client()
      .responses.stream({ model: "alpha-5.4-pro", instructions: system, input: question })
      .finalResponse();
    expect(final.output[0]).toMatchObject({ content: [{ type: "refusal", refusal: expected.text }] });
  });

  it("chat.completions.create refuses metadata without store, as the real API does, and takes it with store", async () => {
    const tags = { feature: "support" };
    await expect(
      client().chat.completions.create({ model: "alpha-5.4", messages, metadata: tags }),
    ).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining("The 'metadata' parameter is only allowed when 'store' is enabled."),
    });
    const stored = await client().chat.completions.create({
      model: "alpha-5.4",
      messages,
      metadata: tags,
      store: true,
    });
    expect(stored.choices[0]?.message.content).toBe(expected.text);
  });

  it("sees a simulated 400 as BadRequestError carrying the message", async () => {
    simulator.setFault({ kind: "status", status: 400, message: "temperature out of range" });
    await expect(client().chat.completions.create({ model: "alpha-5.4", messages })).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining("temperature out of range"),
    });
  });

  it("refuses a call id over 40 characters in chat completions and over 64 in responses, as the real API does", async () => {
    const callOf = (id: string) => ({
      role: "assistant" as const,
      content: null,
      tool_calls: [{ id, type: "function" as const, function: { name: "get_weather", arguments: "{}" } }],
    });
    const chatWith = (id: string) =>
      client().chat.completions.create({
        model: "alpha-5.4",
        messages: [...messages, callOf(id), { role: "tool", tool_call_id: id, content: "Sunny" }],
      });
    await expect(chatWith("c".repeat(41))).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining("maximum length 40"),
    });
    await expect(chatWith("c".repeat(40))).resolves.toBeDefined();

    const responsesWith = (id: string) =>
      client().responses.create({
        model: "alpha-5.4-pro",
        input: [
          { role: "user", content: question },
          { type: "function_call", call_id: id, name: "get_weather", arguments: "{}" },
          { type: "function_call_output", call_id: id, output: "Sunny" },
        ],
      });
    await expect(responsesWith("c".repeat(65))).rejects.toMatchObject({ status: 400 });
    await expect(responsesWith("c".repeat(64))).resolves.toBeDefined();
  });
});

describe("anthropic client against the simulator", () => {
  const client = () => new Anthropic({ apiKey: "test-key", baseURL: simulator.url, maxRetries: 0 });
  const params = {
    model: "delta-4.6-sonnet",
    max_tokens: 1024,
    system,
    messages: [{ role: "user" as const, content: question }],
  };

  it("messages.create returns the text, stop reason and usage with explicit cache counts", async () => {
    const message = await client().messages.create(params);
    expect(message.content).toEqual([{ type: "text", text: expected.text }]);
    expect(message.stop_reason).toBe("end_turn");
    expect(message.usage).toMatchObject({
      input_tokens: expectedPromptTokens,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      output_tokens: expected.outputTokens,
    });
  });

  it("messages.stream().finalMessage() keeps the last cumulative output count", async () => {
    const stream = client().messages.stream(params);
    let streamedText = "";
    stream.on("text", (text) => {
      streamedText += text;
    });
    const final = await stream.finalMessage();
    expect(streamedText).toBe(expected.text);
    expect(final.content).toEqual([expect.objectContaining({ type: "text", text: expected.text })]);
    expect(final.usage.output_tokens).toBe(expected.outputTokens);
    expect(final.usage.input_tokens).toBe(expectedPromptTokens);
  });

  it("messages.create with stream yields the documented events in order", async () => {
    const stream = await client().messages.create({ ...params, stream: true });
    const types = [];
    for await (const event of stream) types.push(event.type);
    expect([...new Set(types)]).toEqual([
      "message_start",
      "content_block_start",
      "content_block_delta",
      "content_block_stop",
      "message_delta",
      "message_stop",
    ]);
  });

  it("sees a max_tokens below the answer as stop reason max_tokens", async () => {
    const message = await client().messages.create({ ...params, max_tokens: 4 });
    expect(message.stop_reason).toBe("max_tokens");
    expect(message.usage.output_tokens).toBeLessThanOrEqual(4);
  });

  it("refuses a temperature above 1 with a 400, as the messages API samples in 0 to 1", async () => {
    // This client's types no longer carry temperature (deprecated upstream), so the body is sent as such.
    const withTemperature = (temperature: number) =>
      fetch(`${simulator.url}/v1/messages`, {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "x-api-key": "test-key",
          "anthropic-version": "2023-06-01",
        },
        body: JSON.stringify({ ...params, temperature }),
      });
    const refused = await withTemperature(1.5);
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ type: "error", error: { type: "invalid_request_error" } });
    expect((await withTemperature(1)).status).toBe(200);
  });

  it("refuses a tool_use id of characters outside its pattern, as the messages API does", async () => {
    const withCallId = (id: string) =>
      client().messages.create({
        ...params,
        messages: [
          { role: "user", content: question },
          { role: "assistant", content: [{ type: "tool_use", id, name: "get_weather", input: {} }] },
          { role: "user", content: [{ type: "tool_result", tool_use_id: id, content: "Sunny" }] },
        ],
      });
    await expect(withCallId("call_1/2=")).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining("String should match pattern"),
    });
    await expect(withCallId("toolu_01-A_b")).resolves.toBeDefined();
  });

  it("sees a simulated 529 as an overloaded error", async () => {
    simulator.setFault({ kind: "status", status: 529, message: "Overloaded" });
    await expect(client().messages.create(params)).rejects.toMatchObject({
      status: 529,
      error: { type: "error", error: { type: "overloaded_error", message: "Overloaded" } },
    });
  });
});

describe("google genai client against the simulator", () => {
  const client = () => new GoogleGenAI({ apiKey: "test-key", httpOptions: { baseUrl: simulator.url } });
  const params = { model: "beta-3-flash", contents: question, config: { systemInstruction: system } };

  it("models.generateContent returns the text and usage metadata", async () => {
    const response = await client().models.generateContent(params);
    expect(response.text).toBe(expected.text);
    expect(response.candidates?.[0]?.finishReason).toBe("STOP");
    expect(response.usageMetadata).toMatchObject({
      promptTokenCount: expectedPromptTokens,
      candidatesTokenCount: expected.outputTokens,
      cachedContentTokenCount: 0,
      thoughtsTokenCount: 0,
    });
  });

  it("models.generateContentStream streams the text with running usage totals", async () => {
    const stream = await client().models.generateContentStream(params);
    let text = "";
    const candidateCounts: (number | undefined)[] = [];
    let lastFinish: string | undefined;
    for await (const chunk of stream) {
      text += chunk.text ?? "";
      candidateCounts.push(chunk.usageMetadata?.candidatesTokenCount);
      lastFinish = chunk.candidates?.[0]?.finishReason ?? lastFinish;
    }
    expect(text).toBe(expected.text);
    expect(lastFinish).toBe("STOP");
    expect(candidateCounts.at(-1)).toBe(expected.outputTokens);
    expect([...candidateCounts].sort((left, right) => (left ?? 0) - (right ?? 0))).toEqual(candidateCounts);
  });

  it("sees a simulated 400 as an ApiError with the message", async () => {
    simulator.setFault({ kind: "status", status: 400, message: "API key not valid" });
    await expect(client().models.generateContent(params)).rejects.toMatchObject({
      status: 400,
      message: expect.stringContaining("API key not valid"),
    });
  });
});
