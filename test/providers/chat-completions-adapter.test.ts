import { countTokens } from "gpt-tokenizer";
import { describe, expect, it } from "vitest";
import type { GenerationRequest } from "../../src/providers/provider";
import { testApiKey, useSimulator } from "./support/simulator-fixture";
import { collectStream, neverAborted, simpleRequest, textOf } from "./support/stream-helpers";

const { simulator, adapter } = useSimulator();

describe("chat-completions adapter against the simulator", () => {
  it("given a JSON request, then it posts to {baseUrl}/chat/completions with a bearer key and the messages as they are", async () => {
    const result = await adapter("chat-completions").generate(simpleRequest, neverAborted());

    const received = simulator().lastRequest();
    expect(received?.path).toBe("/chat/completions");
    expect(received?.headers.authorization).toBe(`Bearer ${testApiKey}`);
    expect(received?.body).toEqual({
      model: "test-model",
      messages: [
        { role: "system", content: "Answer briefly." },
        { role: "user", content: "Describe a quiet harbor at dawn." },
      ],
    });
    expect(result.text.length).toBeGreaterThan(0);
    expect(result.finishReason).toBe("stop");
    expect(result.usage).toEqual({
      inputTokens:
        3 + (3 + countTokens("Answer briefly.")) + (3 + countTokens("Describe a quiet harbor at dawn.")),
      cachedInputTokens: 0,
      outputTokens: countTokens(result.text),
      reasoningTokens: 0,
    });
  });

  it("given a base URL with a path, then the protocol path is appended to it", async () => {
    await adapter("chat-completions", { baseUrl: `${simulator().url}/v1/` }).generate(
      simpleRequest,
      neverAborted(),
    );
    expect(simulator().lastRequest()?.path).toBe("/v1/chat/completions");
  });

  it("given sampling parameters and a limit, then they are sent as temperature, top_p and max_completion_tokens", async () => {
    const request = { ...simpleRequest, temperature: 0.2, topP: 0.9, maxOutputTokens: 5 };
    const result = await adapter("chat-completions").generate(request, neverAborted());

    expect(simulator().lastRequest()?.body).toMatchObject({
      temperature: 0.2,
      top_p: 0.9,
      max_completion_tokens: 5,
    });
    expect(simulator().lastRequest()?.body).not.toHaveProperty("max_tokens");
    expect(result.finishReason).toBe("length");
    expect(result.usage?.outputTokens).toBeLessThanOrEqual(5);
  });

  it("given an upstream that knows only max_tokens, then the option sends that field instead", async () => {
    const chatAdapter = adapter("chat-completions", { chatCompletionsMaxTokensField: "max_tokens" });
    await chatAdapter.generate({ ...simpleRequest, maxOutputTokens: 7 }, neverAborted());
    expect(simulator().lastRequest()?.body).toMatchObject({ max_tokens: 7 });
    expect(simulator().lastRequest()?.body).not.toHaveProperty("max_completion_tokens");
  });

  it("given a stream, then it always asks for usage and yields the deltas, then usage, then finish", async () => {
    const json = await adapter("chat-completions").generate(simpleRequest, neverAborted());
    const { parts, error } = await collectStream(
      adapter("chat-completions").stream(simpleRequest, neverAborted()),
    );

    expect(error).toBeUndefined();
    expect(simulator().lastRequest()?.body).toMatchObject({
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(textOf(parts)).toBe(json.text);
    expect(parts.slice(-2)).toEqual([
      { type: "usage", usage: json.usage },
      { type: "finish", finishReason: "stop" },
    ]);
    expect(parts.slice(0, -2).every((part) => part.type === "text-delta")).toBe(true);
  });
});

const weatherTool = {
  name: "get_weather",
  description: "The weather in a city",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  strict: true,
};

describe("chat-completions adapter: every parameter in the protocol's own words (C12)", () => {
  it("given images, tool turns and every optional parameter, then the body carries them under the protocol's names", async () => {
    const request: GenerationRequest = {
      upstreamModelId: "test-model",
      messages: [
        { role: "system", content: "Answer briefly." },
        {
          role: "user",
          name: "ana",
          content: [
            { type: "text", text: "Compare these, then check the weather." },
            { type: "image", image: { kind: "url", url: "https://images.example/a.png" }, detail: "high" },
            { type: "image", image: { kind: "base64", mediaType: "image/webp", data: "UklGRg==" } },
          ],
        },
        {
          role: "assistant",
          content: "",
          toolCalls: [{ id: "call_1", name: "get_weather", arguments: '{"city":"Seoul"}' }],
        },
        { role: "tool", toolCallId: "call_1", content: '{"celsius":21}' },
      ],
      stop: ["\n\n", "END"],
      seed: 42,
      presencePenalty: 0.5,
      frequencyPenalty: -0.5,
      reasoningEffort: "low",
      user: "user-17",
      tools: [weatherTool, { name: "get_time" }],
      toolChoice: { name: "get_weather" },
      parallelToolCalls: false,
      outputFormat: { type: "json_schema", name: "answer", schema: { type: "object" }, strict: true },
    };
    await adapter("chat-completions").generate(request, neverAborted());

    expect(simulator().lastRequest()?.body).toEqual({
      model: "test-model",
      messages: [
        { role: "system", content: "Answer briefly." },
        {
          role: "user",
          name: "ana",
          content: [
            { type: "text", text: "Compare these, then check the weather." },
            { type: "image_url", image_url: { url: "https://images.example/a.png", detail: "high" } },
            { type: "image_url", image_url: { url: "data:image/webp;base64,UklGRg==" } },
          ],
        },
        {
          role: "assistant",
          content: null,
          tool_calls: [
            {
              id: "call_1",
              type: "function",
              function: { name: "get_weather", arguments: '{"city":"Seoul"}' },
            },
          ],
        },
        { role: "tool", tool_call_id: "call_1", content: '{"celsius":21}' },
      ],
      stop: ["\n\n", "END"],
      seed: 42,
      presence_penalty: 0.5,
      frequency_penalty: -0.5,
      reasoning_effort: "low",
      user: "user-17",
      tools: [
        { type: "function", function: weatherTool },
        { type: "function", function: { name: "get_time" } },
      ],
      tool_choice: { type: "function", function: { name: "get_weather" } },
      parallel_tool_calls: false,
      response_format: {
        type: "json_schema",
        json_schema: { name: "answer", schema: { type: "object" }, strict: true },
      },
    });
  });

  it.each([
    [{ type: "text" }, { type: "text" }],
    [{ type: "json_object" }, { type: "json_object" }],
  ] as const)("given output format %j, then response_format is %j", async (outputFormat, responseFormat) => {
    await adapter("chat-completions").generate({ ...simpleRequest, outputFormat }, neverAborted());
    expect(simulator().lastRequest()?.body).toMatchObject({ response_format: responseFormat });
  });
});

describe("chat-completions adapter: tool calls back", () => {
  const toolRequest: GenerationRequest = { ...simpleRequest, tools: [weatherTool, { name: "get_time" }] };

  it("given a JSON reply with calls, then the result has them in order and finish tool_calls", async () => {
    const result = await adapter("chat-completions").generate(toolRequest, neverAborted());
    expect(result.text).toBe("");
    expect(result.finishReason).toBe("tool_calls");
    expect(result.toolCalls.map((call) => call.name)).toEqual(["get_weather", "get_time"]);
    expect(JSON.parse(result.toolCalls[0]!.arguments)).toEqual({ city: expect.any(String) });
    expect(result.usage?.outputTokens).toBeGreaterThan(0);
  });

  it("given a streamed reply with calls, then starts and argument deltas rebuild the JSON reply's calls", async () => {
    const json = await adapter("chat-completions").generate(toolRequest, neverAborted());
    const { parts, error } = await collectStream(
      adapter("chat-completions").stream(toolRequest, neverAborted()),
    );

    expect(error).toBeUndefined();
    const rebuilt: { id: string; name: string; arguments: string }[] = [];
    for (const part of parts) {
      if (part.type === "tool-call-start")
        rebuilt[part.index] = { id: part.id, name: part.name, arguments: "" };
      if (part.type === "tool-call-delta") rebuilt[part.index]!.arguments += part.argumentsDelta;
    }
    expect(rebuilt).toEqual(json.toolCalls);
    expect(parts.filter((part) => part.type === "tool-call-delta").length).toBeGreaterThan(2);
    expect(parts.slice(-2)).toEqual([
      { type: "usage", usage: json.usage },
      { type: "finish", finishReason: "tool_calls" },
    ]);
  });
});
