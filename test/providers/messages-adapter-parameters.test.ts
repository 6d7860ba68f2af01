import { describe, expect, it } from "vitest";
import { textMessage } from "../../src/providers/message-text";
import {
  type FunctionTool,
  type GenerationRequest,
  type GenerationStreamPart,
  type ToolChoice,
  UnsupportedRequestError,
} from "../../src/providers/provider";
import { simulatedTokensPerImage } from "../../src/providers/simulator/simulated-turn";
import { useSimulator } from "./support/simulator-fixture";
import { collectStream, neverAborted, textOf } from "./support/stream-helpers";

const { simulator, adapter } = useSimulator();

const weatherTool: FunctionTool = {
  name: "get_weather",
  description: "The current weather in a city.",
  parameters: {
    type: "object",
    properties: { city: { type: "string" }, unit: { type: "string", enum: ["celsius", "fahrenheit"] } },
    required: ["city", "unit"],
  },
};
const timeTool: FunctionTool = {
  name: "get_time",
  parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};
const weatherSchema = {
  name: "get_weather",
  description: "The current weather in a city.",
  input_schema: weatherTool.parameters,
};
const timeSchema = { name: "get_time", input_schema: timeTool.parameters };

const ask = (text: string): GenerationRequest => ({
  upstreamModelId: "test-model",
  messages: [textMessage("user", text)],
});
const withTools = (extra: Partial<GenerationRequest> = {}): GenerationRequest => ({
  ...ask("What is the weather and the time in Busan?"),
  tools: [weatherTool, timeTool],
  ...extra,
});
const generate = (request: GenerationRequest) => adapter("messages").generate(request, neverAborted());
const stream = (request: GenerationRequest) =>
  collectStream(adapter("messages").stream(request, neverAborted()));
const sentBody = () => simulator().lastRequest()?.body as Record<string, unknown>;

/** The arguments each streamed call received, joined in order, by the call's index. */
function streamedCalls(parts: readonly GenerationStreamPart[]) {
  const calls: { id: string; name: string; arguments: string }[] = [];
  for (const part of parts) {
    if (part.type === "tool-call-start") calls[part.index] = { id: part.id, name: part.name, arguments: "" };
    if (part.type === "tool-call-delta") calls[part.index]!.arguments += part.argumentsDelta;
  }
  return calls;
}

describe("messages adapter: images", () => {
  it("given a base64 image and an image URL, then they are image blocks with base64 and url sources and billed as images", async () => {
    const request: GenerationRequest = {
      upstreamModelId: "test-model",
      messages: [
        {
          role: "user",
          content: [
            { type: "text", text: "Compare these." },
            {
              type: "image",
              image: { kind: "base64", mediaType: "image/png", data: "iVBORw0KGgo=" },
              detail: "low",
            },
            { type: "image", image: { kind: "url", url: "https://images.example.com/harbor.jpg" } },
          ],
        },
      ],
    };
    const withImages = await generate(request);
    expect(sentBody().messages).toEqual([
      {
        role: "user",
        content: [
          { type: "text", text: "Compare these." },
          { type: "image", source: { type: "base64", media_type: "image/png", data: "iVBORw0KGgo=" } },
          { type: "image", source: { type: "url", url: "https://images.example.com/harbor.jpg" } },
        ],
      },
    ]);
    const textOnly = await generate(ask("Compare these."));
    expect(withImages.usage!.inputTokens! - textOnly.usage!.inputTokens!).toBe(2 * simulatedTokensPerImage);
  });
});

describe("messages adapter: tools and tool choice", () => {
  it("given tools and no choice, then they are sent as name, description and input_schema without tool_choice, and both are called", async () => {
    const result = await generate(withTools());
    expect(sentBody()).toEqual({
      model: "test-model",
      max_tokens: 32_000,
      messages: [{ role: "user", content: "What is the weather and the time in Busan?" }],
      tools: [weatherSchema, timeSchema],
    });
    expect(result.text).toBe("");
    expect(result.finishReason).toBe("tool_calls");
    expect(result.toolCalls).toEqual([
      { id: expect.stringMatching(/^toolu_/), name: "get_weather", arguments: expect.any(String) },
      { id: expect.stringMatching(/^toolu_/), name: "get_time", arguments: expect.any(String) },
    ]);
    expect(JSON.parse(result.toolCalls[0]!.arguments)).toEqual({ city: expect.any(String), unit: "celsius" });
    expect(JSON.parse(result.toolCalls[1]!.arguments)).toEqual({ city: expect.any(String) });
  });

  it.each<[ToolChoice, unknown, string[]]>([
    ["auto", { type: "auto" }, ["get_weather", "get_time"]],
    ["required", { type: "any" }, ["get_weather", "get_time"]],
    [{ name: "get_time" }, { type: "tool", name: "get_time" }, ["get_time"]],
    ["none", { type: "none" }, []],
  ])(
    "given tool choice %j, then tool_choice is %j and the calls follow it",
    async (toolChoice, sent, called) => {
      const result = await generate(withTools({ toolChoice }));
      expect(sentBody().tool_choice).toEqual(sent);
      expect(result.toolCalls.map((call) => call.name)).toEqual(called);
      expect(result.finishReason).toBe(called.length > 0 ? "tool_calls" : "stop");
    },
  );

  it.each<[ToolChoice | undefined, unknown]>([
    [undefined, { type: "auto", disable_parallel_tool_use: true }],
    ["auto", { type: "auto", disable_parallel_tool_use: true }],
    ["required", { type: "any", disable_parallel_tool_use: true }],
    [{ name: "get_weather" }, { type: "tool", name: "get_weather", disable_parallel_tool_use: true }],
    ["none", { type: "none" }],
  ])("given parallel tool calls off and choice %j, then tool_choice is %j", async (toolChoice, sent) => {
    const result = await generate(withTools({ toolChoice, parallelToolCalls: false }));
    expect(sentBody().tool_choice).toEqual(sent);
    expect(result.toolCalls.length).toBe(toolChoice === "none" ? 0 : 1);
  });

  it("given parallel tool calls on, then nothing is added: parallel use is the protocol's default", async () => {
    await generate(withTools({ parallelToolCalls: true }));
    expect(sentBody()).not.toHaveProperty("tool_choice");
  });

  it("given a strict tool without parameters, then strict is sent and the input schema is an empty object schema", async () => {
    await generate({ ...ask("Ping."), tools: [{ name: "ping", strict: true }], toolChoice: "none" });
    expect(sentBody().tools).toEqual([
      { name: "ping", input_schema: { type: "object", properties: {} }, strict: true },
    ]);
  });

  it("given a stream with two calls, then starts and argument deltas carry the calls' ordinals and join to the JSON reply's arguments", async () => {
    const whole = await generate(withTools());
    const { parts, error } = await stream(withTools());

    expect(error).toBeUndefined();
    expect(sentBody()).toMatchObject({ stream: true, tools: [weatherSchema, timeSchema] });
    const starts = parts.filter((part) => part.type === "tool-call-start");
    expect(starts).toEqual([
      { type: "tool-call-start", index: 0, id: whole.toolCalls[0]!.id, name: "get_weather" },
      { type: "tool-call-start", index: 1, id: whole.toolCalls[1]!.id, name: "get_time" },
    ]);
    // Arguments arrive in several pieces, each after its call's start.
    expect(parts.filter((part) => part.type === "tool-call-delta").length).toBeGreaterThan(2);
    expect(parts.indexOf(starts[1]!)).toBeGreaterThan(
      parts.findIndex((part) => part.type === "tool-call-delta"),
    );
    expect(streamedCalls(parts)).toEqual(whole.toolCalls);
    expect(textOf(parts)).toBe("");
    expect(parts.slice(-2)).toEqual([
      { type: "usage", usage: whole.usage },
      { type: "finish", finishReason: "tool_calls" },
    ]);
  });
});

describe("messages adapter: tool turns", () => {
  const calls = [
    { id: "toolu_weather1", name: "get_weather", arguments: '{"city":"Busan","unit":"celsius"}' },
    { id: "toolu_time1", name: "get_time", arguments: '{"city":"Busan"}' },
  ];
  const history: GenerationRequest["messages"] = [
    { role: "system", content: "Use the tools." },
    textMessage("user", "What is the weather and the time in Busan?"),
    { role: "assistant", content: "Let me check.", toolCalls: calls },
    { role: "tool", toolCallId: "toolu_weather1", content: "18°C, clear" },
    { role: "tool", toolCallId: "toolu_time1", content: "14:05" },
  ];
  const sentHistory = [
    { role: "user", content: "What is the weather and the time in Busan?" },
    {
      role: "assistant",
      content: [
        { type: "text", text: "Let me check." },
        {
          type: "tool_use",
          id: "toolu_weather1",
          name: "get_weather",
          input: { city: "Busan", unit: "celsius" },
        },
        { type: "tool_use", id: "toolu_time1", name: "get_time", input: { city: "Busan" } },
      ],
    },
  ];

  it("given two tool results, then they are tool_result blocks of one user turn, and the model answers in text", async () => {
    const result = await generate({
      upstreamModelId: "test-model",
      messages: history,
      tools: [weatherTool, timeTool],
    });
    expect(sentBody()).toMatchObject({
      system: "Use the tools.",
      messages: [
        ...sentHistory,
        {
          role: "user",
          content: [
            { type: "tool_result", tool_use_id: "toolu_weather1", content: "18°C, clear" },
            { type: "tool_result", tool_use_id: "toolu_time1", content: "14:05" },
          ],
        },
      ],
    });
    expect(result.toolCalls).toEqual([]);
    expect(result.text).toMatch(/\w/);
    expect(result.finishReason).toBe("stop");
  });

  it("given a user message right after the results, then it joins their turn, after them", async () => {
    await generate({
      upstreamModelId: "test-model",
      messages: [...history, textMessage("user", "Summarise both.")],
      tools: [weatherTool, timeTool],
      toolChoice: "none",
    });
    expect(sentBody().messages).toEqual([
      ...sentHistory,
      {
        role: "user",
        content: [
          { type: "tool_result", tool_use_id: "toolu_weather1", content: "18°C, clear" },
          { type: "tool_result", tool_use_id: "toolu_time1", content: "14:05" },
          { type: "text", text: "Summarise both." },
        ],
      },
    ]);
  });

  it("given an assistant turn that only called a tool with empty arguments, then it has one tool_use block with input {}", async () => {
    await generate({
      upstreamModelId: "test-model",
      messages: [
        textMessage("user", "Ping."),
        { role: "assistant", content: "", toolCalls: [{ id: "toolu_ping1", name: "ping", arguments: "" }] },
        { role: "tool", toolCallId: "toolu_ping1", content: "pong" },
      ],
      tools: [{ name: "ping" }],
    });
    expect((sentBody().messages as unknown[])[1]).toEqual({
      role: "assistant",
      content: [{ type: "tool_use", id: "toolu_ping1", name: "ping", input: {} }],
    });
  });

  it.each(["[1, 2]", "not json", '"text"'])(
    "given call arguments %s that are not a JSON object, then it is refused before any upstream call",
    async (argumentsText) => {
      const request: GenerationRequest = {
        upstreamModelId: "test-model",
        messages: [
          textMessage("user", "Ping."),
          {
            role: "assistant",
            content: "",
            toolCalls: [{ id: "toolu_bad", name: "ping", arguments: argumentsText }],
          },
          { role: "tool", toolCallId: "toolu_bad", content: "pong" },
        ],
      };
      await expect(generate(request)).rejects.toThrow(UnsupportedRequestError);
      await expect(generate(request)).rejects.toThrow(
        'arguments of tool call "toolu_bad": not a JSON object',
      );
      expect(simulator().recordedRequests()).toEqual([]);
    },
  );
});

describe("messages adapter: stop, user, reasoning", () => {
  it("given stop sequences and a user, then they are stop_sequences and metadata.user_id", async () => {
    await generate({ ...ask("Count."), stop: ["END", "\n###"], user: "user-7f3a" });
    expect(sentBody()).toEqual({
      model: "test-model",
      max_tokens: 32_000,
      messages: [{ role: "user", content: "Count." }],
      stop_sequences: ["END", "\n###"],
      metadata: { user_id: "user-7f3a" },
    });
  });

  it("given a stop sequence of whitespace only, then the upstream refuses it, naming the field", async () => {
    await expect(generate({ ...ask("Count."), stop: ["\n\n"] })).rejects.toMatchObject({
      name: "UpstreamRejectedError",
      message: expect.stringContaining("stop_sequences.0"),
    });
  });

  it.each([
    ["minimal", "low"],
    ["low", "low"],
    ["medium", "medium"],
    ["high", "high"],
    ["xhigh", "xhigh"],
  ] as const)("given reasoning effort %s, then adaptive thinking with effort %s", async (effort, sent) => {
    const result = await generate({ ...ask("Why do rivers bend?"), reasoningEffort: effort });
    expect(sentBody()).toMatchObject({ thinking: { type: "adaptive" }, output_config: { effort: sent } });
    expect(result.text).toMatch(/\w/);
  });

  it("given reasoning effort none, then thinking is disabled and no effort is sent", async () => {
    await generate({ ...ask("Why do rivers bend?"), reasoningEffort: "none" });
    expect(sentBody().thinking).toEqual({ type: "disabled" });
    expect(sentBody()).not.toHaveProperty("output_config");
  });

  it.each<[ToolChoice, unknown, string]>([
    ["required", { type: "any" }, "get_weather"],
    [{ name: "get_time" }, { type: "tool", name: "get_time" }, "get_time"],
  ])(
    "given reasoning with forced tool choice %j, then thinking is disabled, its effort kept, and the tool is called",
    async (toolChoice, sentChoice, called) => {
      const result = await generate(withTools({ reasoningEffort: "high", toolChoice }));
      expect(sentBody()).toMatchObject({
        tool_choice: sentChoice,
        thinking: { type: "disabled" },
        output_config: { effort: "high" },
      });
      expect(result.toolCalls[0]?.name).toBe(called);
    },
  );

  it("given reasoning with tool choice auto, then thinking stays adaptive", async () => {
    await generate(withTools({ reasoningEffort: "high", toolChoice: "auto" }));
    expect(sentBody()).toMatchObject({ tool_choice: { type: "auto" }, thinking: { type: "adaptive" } });
  });
});

describe("messages adapter: structured output", () => {
  const schema = {
    type: "object",
    properties: { city: { type: "string" }, population: { type: "integer" } },
    required: ["city", "population"],
    additionalProperties: false,
  };
  const jsonSchema = { type: "json_schema" as const, name: "city", schema, strict: true };

  it("given a json_schema format, then it is output_config.format and the text is an instance of the schema, JSON and stream alike", async () => {
    const request = { ...ask("Name a city."), outputFormat: jsonSchema, reasoningEffort: "low" as const };
    const result = await generate(request);
    expect(sentBody().output_config).toEqual({ effort: "low", format: { type: "json_schema", schema } });
    expect(sentBody()).not.toHaveProperty("tools");
    expect(JSON.parse(result.text)).toEqual({ city: expect.any(String), population: expect.any(Number) });
    expect(result.finishReason).toBe("stop");

    const { parts } = await stream(request);
    expect(textOf(parts)).toBe(result.text);
  });

  it("given json_object, then a forced answer tool is sent and its input is the reply's text, not a tool call", async () => {
    const request: GenerationRequest = {
      ...ask("Describe Busan as JSON."),
      outputFormat: { type: "json_object" },
    };
    const result = await generate(request);
    expect(sentBody()).toMatchObject({
      tools: [{ name: "json_answer", description: expect.any(String), input_schema: { type: "object" } }],
      tool_choice: { type: "any" },
    });
    expect(result).toMatchObject({ text: "{}", toolCalls: [], finishReason: "stop" });

    const { parts, error } = await stream(request);
    expect(error).toBeUndefined();
    expect(parts.filter((part) => part.type.startsWith("tool-call"))).toEqual([]);
    expect(textOf(parts)).toBe("{}");
    expect(parts.at(-1)).toEqual({ type: "finish", finishReason: "stop" });
  });

  it("given json_object with reasoning, then thinking is disabled (the answer tool is forced) and the reply is the JSON", async () => {
    const result = await generate({
      ...ask("Describe Busan as JSON."),
      outputFormat: { type: "json_object" },
      reasoningEffort: "high",
    });
    expect(sentBody()).toMatchObject({
      tool_choice: { type: "any" },
      thinking: { type: "disabled" },
      output_config: { effort: "high" },
    });
    expect(result).toMatchObject({ text: "{}", toolCalls: [], finishReason: "stop" });
  });

  it("given json_object with client tools, then the answer tool joins them under a free name and only client calls are tool calls", async () => {
    const taken: FunctionTool = { name: "json_answer", parameters: { type: "object", properties: {} } };
    const result = await generate({
      ...ask("Weather in Busan?"),
      tools: [taken, weatherTool],
      outputFormat: { type: "json_object" },
    });
    expect((sentBody().tools as { name: string }[]).map((tool) => tool.name)).toEqual([
      "json_answer",
      "get_weather",
      "json_answer_2",
    ]);
    // The simulated model calls the first two tools it is offered: both are the client's.
    expect(result.toolCalls.map((call) => call.name)).toEqual(["json_answer", "get_weather"]);
    expect(result.finishReason).toBe("tool_calls");
  });
});
