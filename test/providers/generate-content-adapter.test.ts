import { countTokens } from "gpt-tokenizer";
import { describe, expect, it } from "vitest";
import { textMessage } from "../../src/providers/message-text";
import {
  type FunctionTool,
  type GenerationRequest,
  UnsupportedRequestError,
} from "../../src/providers/provider";
import { simulatedTokensPerImage } from "../../src/providers/simulator/simulated-turn";
import { testApiKey, useSimulator } from "./support/simulator-fixture";
import { collectStream, neverAborted, simpleRequest, textOf } from "./support/stream-helpers";

const { simulator, adapter } = useSimulator();

describe("generate-content adapter against the simulator", () => {
  it("given a conversation, then system goes to systemInstruction, assistant becomes model, no generationConfig", async () => {
    const request = {
      upstreamModelId: "beta-3-flash",
      messages: [
        { role: "system" as const, content: "Be terse." },
        textMessage("user", "Name a river."),
        textMessage("assistant", "The Han."),
        textMessage("user", "Another?"),
      ],
    };
    const result = await adapter("generate-content").generate(request, neverAborted());

    const received = simulator().lastRequest();
    expect(received?.path).toBe("/v1beta/models/beta-3-flash:generateContent");
    expect(received?.headers["x-goog-api-key"]).toBe(testApiKey);
    expect(received?.headers.authorization).toBeUndefined();
    expect(received?.body).toEqual({
      contents: [
        { role: "user", parts: [{ text: "Name a river." }] },
        { role: "model", parts: [{ text: "The Han." }] },
        { role: "user", parts: [{ text: "Another?" }] },
      ],
      systemInstruction: { parts: [{ text: "Be terse." }] },
    });
    expect(result.usage).toEqual({
      inputTokens: expect.any(Number),
      cachedInputTokens: 0,
      outputTokens: countTokens(result.text),
      reasoningTokens: 0,
    });
  });

  it("given sampling parameters and a limit, then they go to generationConfig", async () => {
    const request = { ...simpleRequest, temperature: 0.7, topP: 0.95, maxOutputTokens: 5 };
    const result = await adapter("generate-content").generate(request, neverAborted());
    expect(simulator().lastRequest()?.body).toMatchObject({
      generationConfig: { temperature: 0.7, topP: 0.95, maxOutputTokens: 5 },
    });
    expect(result.finishReason).toBe("length");
  });

  it("given a stream, then it calls :streamGenerateContent?alt=sse and keeps the last chunk's usage", async () => {
    const json = await adapter("generate-content").generate(simpleRequest, neverAborted());
    const { parts, error } = await collectStream(
      adapter("generate-content").stream(simpleRequest, neverAborted()),
    );

    expect(error).toBeUndefined();
    expect(simulator().lastRequest()?.path).toBe("/v1beta/models/test-model:streamGenerateContent?alt=sse");
    expect(textOf(parts)).toBe(json.text);
    expect(parts.slice(-2)).toEqual([
      { type: "usage", usage: json.usage },
      { type: "finish", finishReason: "stop" },
    ]);
  });
});

const weatherTool: FunctionTool = {
  name: "get_weather",
  description: "The weather in a city",
  parameters: {
    type: "object",
    properties: { city: { type: "string" } },
    required: ["city"],
    additionalProperties: false,
  },
};
const timeTool: FunctionTool = { name: "get_time", parameters: { type: "object", properties: {} } };
const question = textMessage("user", "What is the weather in Seoul?");
/** The body the simulator received last, as the adapter sent it. */
function lastBody(): Record<string, unknown> {
  const received = simulator().lastRequest();
  if (!received) throw new Error("no upstream request was made");
  return received.body as Record<string, unknown>;
}
const callId = /^call_[0-9a-f]{24}(__thought__.+)?$/;

describe("generate-content adapter: content parts", () => {
  it("given a base64 image and an https image, then they go as inlineData and fileData with the type read from the path", async () => {
    const request: GenerationRequest = {
      upstreamModelId: "beta-3-flash",
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "Compare these." },
            { type: "image", image: { kind: "base64", mediaType: "image/png", data: "iVBORw0KGgo=" } },
            {
              type: "image",
              image: { kind: "url", url: "https://example.com/a/harbor.JPG?v=2" },
              detail: "low",
            },
          ],
        },
      ],
    };
    const result = await adapter("generate-content").generate(request, neverAborted());

    expect(simulator().lastRequest()?.body).toEqual({
      contents: [
        {
          role: "user",
          parts: [
            { text: "Compare these." },
            { inlineData: { mimeType: "image/png", data: "iVBORw0KGgo=" } },
            { fileData: { fileUri: "https://example.com/a/harbor.JPG?v=2", mimeType: "image/jpeg" } },
          ],
        },
      ],
    });
    const textOnly = await adapter("generate-content").generate(
      { upstreamModelId: "beta-3-flash", messages: [textMessage("user", "Compare these.")] },
      neverAborted(),
    );
    expect(result.usage?.inputTokens).toBe((textOnly.usage?.inputTokens ?? 0) + 2 * simulatedTokensPerImage);
  });

  it("given an image URL whose path names no image type, then it is refused before any upstream call", async () => {
    const request: GenerationRequest = {
      upstreamModelId: "beta-3-flash",
      messages: [
        {
          role: "user",
          content: [{ type: "image", image: { kind: "url", url: "https://example.com/render?id=7" } }],
        },
      ],
    };
    const failure = adapter("generate-content").generate(request, neverAborted());
    await expect(failure).rejects.toBeInstanceOf(UnsupportedRequestError);
    await expect(failure).rejects.toThrow(/^image_url: .*\.png.*data: URL/);
    expect(simulator().lastRequest()).toBeUndefined();
  });
});

describe("generate-content adapter: tools", () => {
  it("given tools under auto, then declarations carry the JSON Schema as parametersJsonSchema and the calls come back with finish tool_calls", async () => {
    const request = { ...simpleRequest, tools: [weatherTool, timeTool], toolChoice: "auto" as const };
    const result = await adapter("generate-content").generate(request, neverAborted());

    expect(simulator().lastRequest()?.body).toMatchObject({
      tools: [
        {
          functionDeclarations: [
            {
              name: "get_weather",
              description: "The weather in a city",
              parametersJsonSchema: weatherTool.parameters,
            },
            { name: "get_time", parametersJsonSchema: timeTool.parameters },
          ],
        },
      ],
      toolConfig: { functionCallingConfig: { mode: "AUTO" } },
    });
    expect(result.text).toBe("");
    expect(result.finishReason).toBe("tool_calls");
    expect(result.toolCalls).toEqual([
      { id: expect.stringMatching(callId), name: "get_weather", arguments: expect.any(String) },
      { id: expect.stringMatching(callId), name: "get_time", arguments: "{}" },
    ]);
    expect(JSON.parse(result.toolCalls[0]?.arguments ?? "")).toEqual({ city: expect.any(String) });
    // Only the first call of a step is signed, and its signature rides in its id.
    expect(result.toolCalls[0]?.id).toContain("__thought__");
    expect(result.toolCalls[1]?.id).not.toContain("__thought__");
    expect(new Set(result.toolCalls.map((call) => call.id)).size).toBe(2);
  });

  it.each([
    ["required", undefined, { mode: "ANY" }],
    ["none", undefined, { mode: "NONE" }],
    [{ name: "get_time" }, undefined, { mode: "ANY", allowedFunctionNames: ["get_time"] }],
    ["auto", true, { mode: "VALIDATED" }],
    [undefined, true, { mode: "VALIDATED" }],
  ] as const)(
    "given tool choice %j (strict %s), then functionCallingConfig is %j",
    async (toolChoice, strict, config) => {
      const request: GenerationRequest = {
        ...simpleRequest,
        tools: [{ ...weatherTool, ...(strict && { strict }) }, timeTool],
        ...(toolChoice !== undefined && { toolChoice }),
      };
      await adapter("generate-content").generate(request, neverAborted());
      expect(lastBody().toolConfig).toEqual({
        functionCallingConfig: config,
      });
    },
  );

  it("given tools without a choice or strictness, then no toolConfig is sent (the protocol's default is AUTO)", async () => {
    await adapter("generate-content").generate({ ...simpleRequest, tools: [timeTool] }, neverAborted());
    expect(simulator().lastRequest()?.body).not.toHaveProperty("toolConfig");
  });

  it("given a named function, then only that function is called", async () => {
    const request = { ...simpleRequest, tools: [weatherTool, timeTool], toolChoice: { name: "get_time" } };
    const result = await adapter("generate-content").generate(request, neverAborted());
    expect(result.toolCalls.map((call) => call.name)).toEqual(["get_time"]);
  });

  it("given parallel tool calls allowed, then the request is sent unchanged; forbidden, then it is refused", async () => {
    await adapter("generate-content").generate(
      { ...simpleRequest, tools: [timeTool], parallelToolCalls: true },
      neverAborted(),
    );
    expect(simulator().lastRequest()?.body).not.toHaveProperty("toolConfig");
    simulator().clearRecordedRequests();
    await expect(
      adapter("generate-content").generate(
        { ...simpleRequest, tools: [timeTool], parallelToolCalls: false },
        neverAborted(),
      ),
    ).rejects.toThrow(/^parallel_tool_calls: false is not supported/);
    expect(simulator().lastRequest()).toBeUndefined();
  });

  it("given a tool loop, then calls are functionCall parts with their signature and results functionResponse parts named by their call, in one turn", async () => {
    const first = await adapter("generate-content").generate(
      { upstreamModelId: "beta-3-flash", messages: [question], tools: [weatherTool, timeTool] },
      neverAborted(),
    );
    const [weatherCall, timeCall] = first.toolCalls;
    if (!weatherCall || !timeCall) throw new Error("the simulated model made no calls");
    const signature = weatherCall.id.split("__thought__")[1];
    const request: GenerationRequest = {
      upstreamModelId: "beta-3-flash",
      messages: [
        question,
        { role: "assistant", content: "", toolCalls: first.toolCalls },
        { role: "tool", toolCallId: timeCall.id, content: "09:30 KST" },
        { role: "tool", toolCallId: weatherCall.id, content: '{"sky":"clear","celsius":21}' },
      ],
      tools: [weatherTool, timeTool],
    };
    const result = await adapter("generate-content").generate(request, neverAborted());

    expect(simulator().lastRequest()?.body).toMatchObject({
      contents: [
        { role: "user", parts: [{ text: "What is the weather in Seoul?" }] },
        {
          role: "model",
          parts: [
            {
              functionCall: { name: "get_weather", args: JSON.parse(weatherCall.arguments) },
              thoughtSignature: signature,
            },
            { functionCall: { name: "get_time", args: {} } },
          ],
        },
        {
          role: "user",
          parts: [
            { functionResponse: { name: "get_time", response: { output: "09:30 KST" } } },
            { functionResponse: { name: "get_weather", response: { sky: "clear", celsius: 21 } } },
          ],
        },
      ],
    });
    expect(result.toolCalls).toEqual([]);
    expect(result.finishReason).toBe("stop");
    expect(result.text).toMatch(/\w/);
  });

  it("given calls from elsewhere (no signature in their ids) with text, then the first call of the turn carries the documented sentinel", async () => {
    const request: GenerationRequest = {
      upstreamModelId: "beta-3-flash",
      messages: [
        question,
        {
          role: "assistant",
          content: "Looking it up.",
          toolCalls: [
            { id: "toolu_01", name: "get_weather", arguments: '{"city":"Seoul"}' },
            { id: "toolu_02", name: "get_time", arguments: "" },
          ],
        },
        { role: "tool", toolCallId: "toolu_01", content: "[1, 2]" },
        { role: "tool", toolCallId: "toolu_02", content: "null" },
        textMessage("user", "And tomorrow?"),
      ],
      tools: [weatherTool, timeTool],
      toolChoice: "none",
    };
    await adapter("generate-content").generate(request, neverAborted());

    expect(lastBody().contents).toEqual([
      { role: "user", parts: [{ text: "What is the weather in Seoul?" }] },
      {
        role: "model",
        parts: [
          { text: "Looking it up." },
          {
            functionCall: { name: "get_weather", args: { city: "Seoul" } },
            thoughtSignature: "skip_thought_signature_validator",
          },
          { functionCall: { name: "get_time", args: {} } },
        ],
      },
      {
        role: "user",
        parts: [
          { functionResponse: { name: "get_weather", response: { output: "[1, 2]" } } },
          { functionResponse: { name: "get_time", response: { output: "null" } } },
        ],
      },
      { role: "user", parts: [{ text: "And tomorrow?" }] },
    ]);
  });

  it.each([
    [
      "a result for a call no assistant made",
      [question, { role: "tool" as const, toolCallId: "call_missing", content: "x" }],
      /^tool result for call "call_missing": answers no tool call/,
    ],
    [
      "a call whose arguments are not a JSON object",
      [
        question,
        { role: "assistant" as const, content: "", toolCalls: [{ id: "c1", name: "f", arguments: "[1]" }] },
      ],
      /^arguments of tool call "c1": not a JSON object/,
    ],
  ])("given %s, then it is refused before any upstream call", async (_case, messages, message) => {
    const failure = adapter("generate-content").generate(
      { upstreamModelId: "beta-3-flash", messages },
      neverAborted(),
    );
    await expect(failure).rejects.toBeInstanceOf(UnsupportedRequestError);
    await expect(failure).rejects.toThrow(message);
    expect(simulator().lastRequest()).toBeUndefined();
  });

  it("given a stream with parallel calls, then each call is a start and one whole delta, indexed from 0, and the finish is tool_calls", async () => {
    const request = { ...simpleRequest, tools: [weatherTool, timeTool] };
    const json = await adapter("generate-content").generate(request, neverAborted());
    const { parts, error } = await collectStream(adapter("generate-content").stream(request, neverAborted()));

    expect(error).toBeUndefined();
    expect(parts).toEqual([
      {
        type: "input-usage",
        usage: { inputTokens: json.usage?.inputTokens, cachedInputTokens: json.usage?.cachedInputTokens },
      },
      { type: "tool-call-start", index: 0, id: expect.stringMatching(callId), name: "get_weather" },
      { type: "tool-call-delta", index: 0, argumentsDelta: json.toolCalls[0]?.arguments },
      { type: "tool-call-start", index: 1, id: expect.stringMatching(callId), name: "get_time" },
      { type: "tool-call-delta", index: 1, argumentsDelta: "{}" },
      { type: "usage", usage: json.usage },
      { type: "finish", finishReason: "tool_calls" },
    ]);
  });
});

describe("generate-content adapter: generation config", () => {
  it("given stop, seed, penalties and a reasoning effort, then they go to generationConfig in the protocol's words", async () => {
    const request: GenerationRequest = {
      ...simpleRequest,
      stop: ["END", "\n\n"],
      seed: 42,
      presencePenalty: 0.5,
      frequencyPenalty: -0.25,
      reasoningEffort: "medium",
    };
    await adapter("generate-content").generate(request, neverAborted());
    expect(lastBody().generationConfig).toEqual({
      stopSequences: ["END", "\n\n"],
      seed: 42,
      presencePenalty: 0.5,
      frequencyPenalty: -0.25,
      thinkingConfig: { thinkingLevel: "MEDIUM" },
    });
  });

  it.each([
    ["none", "MINIMAL"],
    ["minimal", "MINIMAL"],
    ["low", "LOW"],
    ["high", "HIGH"],
  ] as const)("given reasoning effort %s, then thinkingLevel is %s", async (effort, level) => {
    await adapter("generate-content").generate({ ...simpleRequest, reasoningEffort: effort }, neverAborted());
    expect(simulator().lastRequest()?.body).toMatchObject({
      generationConfig: { thinkingConfig: { thinkingLevel: level } },
    });
  });

  it("given reasoning effort xhigh, then it is refused: nothing is above high", async () => {
    await expect(
      adapter("generate-content").generate({ ...simpleRequest, reasoningEffort: "xhigh" }, neverAborted()),
    ).rejects.toThrow(/^reasoning effort "xhigh": not supported/);
    expect(simulator().lastRequest()).toBeUndefined();
  });

  it("given a JSON schema output, then responseMimeType and responseJsonSchema are sent and the text is an instance", async () => {
    const schema = {
      type: "object",
      properties: { city: { type: "string" }, population: { type: "integer" } },
      required: ["city", "population"],
      additionalProperties: false,
    };
    const request: GenerationRequest = {
      ...simpleRequest,
      outputFormat: { type: "json_schema", name: "city", schema, strict: true },
    };
    const result = await adapter("generate-content").generate(request, neverAborted());
    expect(lastBody().generationConfig).toEqual({
      responseMimeType: "application/json",
      responseJsonSchema: schema,
    });
    expect(JSON.parse(result.text)).toEqual({ city: expect.any(String), population: expect.any(Number) });

    const { parts } = await collectStream(adapter("generate-content").stream(request, neverAborted()));
    expect(textOf(parts)).toBe(result.text);
  });

  it("given a JSON object output, then only responseMimeType is sent; given text, then nothing", async () => {
    const result = await adapter("generate-content").generate(
      { ...simpleRequest, outputFormat: { type: "json_object" } },
      neverAborted(),
    );
    expect(simulator().lastRequest()?.body).toMatchObject({
      generationConfig: { responseMimeType: "application/json" },
    });
    expect(JSON.parse(result.text)).toBeTypeOf("object");
    await adapter("generate-content").generate(
      { ...simpleRequest, outputFormat: { type: "text" } },
      neverAborted(),
    );
    expect(simulator().lastRequest()?.body).not.toHaveProperty("generationConfig");
  });
});
