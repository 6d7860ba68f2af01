import { countTokens } from "gpt-tokenizer";
import { describe, expect, it } from "vitest";
import { textMessage } from "../../src/providers/message-text";
import { testApiKey, useSimulator } from "./support/simulator-fixture";
import { collectStream, neverAborted, simpleRequest, textOf } from "./support/stream-helpers";

const { simulator, adapter } = useSimulator();

describe("responses adapter against the simulator", () => {
  it("given leading system messages, then they become instructions and the rest stays input, unstored", async () => {
    const request = {
      upstreamModelId: "test-model",
      messages: [
        { role: "system" as const, content: "Be terse." },
        { role: "system" as const, content: "Use metric units." },
        textMessage("user", "How tall is the tower?"),
        textMessage("assistant", "Three hundred metres."),
        { role: "system" as const, content: "Now answer in French." },
        textMessage("user", "And the bridge?"),
      ],
    };
    const result = await adapter("responses").generate(request, neverAborted());

    const received = simulator().lastRequest();
    expect(received?.path).toBe("/responses");
    expect(received?.headers.authorization).toBe(`Bearer ${testApiKey}`);
    expect(received?.body).toEqual({
      model: "test-model",
      instructions: "Be terse.\n\nUse metric units.",
      input: [
        { role: "user", content: "How tall is the tower?" },
        { role: "assistant", content: "Three hundred metres." },
        { role: "system", content: "Now answer in French." },
        { role: "user", content: "And the bridge?" },
      ],
      store: false,
    });
    expect(result.finishReason).toBe("stop");
    expect(result.usage).toEqual({
      inputTokens: expect.any(Number),
      cachedInputTokens: 0,
      outputTokens: countTokens(result.text),
      reasoningTokens: 0,
    });
  });

  it("given no system message, then no instructions are sent", async () => {
    await adapter("responses").generate(
      { upstreamModelId: "m", messages: [textMessage("user", "hi")] },
      neverAborted(),
    );
    expect(simulator().lastRequest()?.body).not.toHaveProperty("instructions");
  });

  it("given a limit and sampling parameters, then max_output_tokens is sent and a cut answer finishes with length", async () => {
    const request = { ...simpleRequest, temperature: 0.5, topP: 0.5, maxOutputTokens: 4 };
    const result = await adapter("responses").generate(request, neverAborted());
    expect(simulator().lastRequest()?.body).toMatchObject({
      temperature: 0.5,
      top_p: 0.5,
      max_output_tokens: 4,
    });
    expect(result.finishReason).toBe("length");
  });

  it("given a stream, then it yields the deltas, the usage of response.completed, then finish", async () => {
    const json = await adapter("responses").generate(simpleRequest, neverAborted());
    const { parts, error } = await collectStream(adapter("responses").stream(simpleRequest, neverAborted()));

    expect(error).toBeUndefined();
    expect(simulator().lastRequest()?.body).toMatchObject({ stream: true });
    expect(textOf(parts)).toBe(json.text);
    expect(parts.slice(-2)).toEqual([
      { type: "usage", usage: json.usage },
      { type: "finish", finishReason: "stop" },
    ]);
  });

  it("given a cut stream (response.incomplete), then the finish is length", async () => {
    const { parts } = await collectStream(
      adapter("responses").stream({ ...simpleRequest, maxOutputTokens: 3 }, neverAborted()),
    );
    expect(parts.at(-1)).toEqual({ type: "finish", finishReason: "length" });
  });
});

describe("responses adapter: tools, images and parameters", () => {
  const weather = {
    name: "get_weather",
    description: "The weather in a city",
    parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
  };

  it("given every parameter, then each is sent in the protocol's own words", async () => {
    const schema = { type: "object", properties: { answer: { type: "string" } } };
    await adapter("responses").generate(
      {
        upstreamModelId: "m",
        messages: [
          {
            role: "user",
            content: [
              { type: "text", text: "What is here?" },
              { type: "image", image: { kind: "url", url: "https://example.com/a.png" }, detail: "low" },
              { type: "image", image: { kind: "base64", mediaType: "image/png", data: "iVBORw0KGgo=" } },
            ],
          },
          {
            role: "assistant",
            content: "Checking.",
            toolCalls: [{ id: "call_1", name: "get_weather", arguments: '{"city":"Seoul"}' }],
          },
          { role: "tool", toolCallId: "call_1", content: "Sunny" },
          {
            role: "assistant",
            content: "",
            toolCalls: [{ id: "call_2", name: "get_weather", arguments: "{}" }],
          },
          { role: "tool", toolCallId: "call_2", content: "Rain" },
        ],
        tools: [{ ...weather, strict: true }, { name: "get_time" }],
        toolChoice: { name: "get_weather" },
        parallelToolCalls: false,
        outputFormat: { type: "json_schema", name: "answer", schema, strict: true },
        reasoningEffort: "high",
        metadata: { team: "search" },
        user: "user-42",
      },
      neverAborted(),
    );
    expect(simulator().lastRequest()?.body).toEqual({
      model: "m",
      input: [
        {
          role: "user",
          content: [
            { type: "input_text", text: "What is here?" },
            { type: "input_image", image_url: "https://example.com/a.png", detail: "low" },
            { type: "input_image", image_url: "data:image/png;base64,iVBORw0KGgo=", detail: "auto" },
          ],
        },
        { role: "assistant", content: "Checking." },
        { type: "function_call", call_id: "call_1", name: "get_weather", arguments: '{"city":"Seoul"}' },
        { type: "function_call_output", call_id: "call_1", output: "Sunny" },
        { type: "function_call", call_id: "call_2", name: "get_weather", arguments: "{}" },
        { type: "function_call_output", call_id: "call_2", output: "Rain" },
      ],
      tools: [
        { type: "function", ...weather, strict: true },
        { type: "function", name: "get_time", parameters: null },
      ],
      tool_choice: { type: "function", name: "get_weather" },
      parallel_tool_calls: false,
      text: { format: { type: "json_schema", name: "answer", schema, strict: true } },
      reasoning: { effort: "high" },
      metadata: { team: "search" },
      safety_identifier: "user-42",
      store: false,
    });
  });

  it("given tools, then the calls come back in order with their call ids and finish tool_calls", async () => {
    const request = {
      upstreamModelId: "m",
      messages: [textMessage("user", "Weather and time?")],
      tools: [weather, { name: "get_time", parameters: { type: "object", properties: {} } }],
    };
    const result = await adapter("responses").generate(request, neverAborted());
    expect(result).toMatchObject({
      text: "",
      finishReason: "tool_calls",
      toolCalls: [
        {
          id: expect.stringMatching(/^call_/),
          name: "get_weather",
          arguments: expect.stringMatching(/^\{"city":/),
        },
        { id: expect.stringMatching(/^call_/), name: "get_time", arguments: "{}" },
      ],
    });
    expect(result.usage?.outputTokens).toBeGreaterThan(0);

    const { parts, error } = await collectStream(adapter("responses").stream(request, neverAborted()));
    expect(error).toBeUndefined();
    const starts = parts.filter((part) => part.type === "tool-call-start");
    expect(starts).toEqual(
      result.toolCalls.map((call, index) => ({
        type: "tool-call-start",
        index,
        id: call.id,
        name: call.name,
      })),
    );
    for (const [index, call] of result.toolCalls.entries()) {
      const streamed = parts
        .filter((part) => part.type === "tool-call-delta" && part.index === index)
        .map((part) => (part.type === "tool-call-delta" ? part.argumentsDelta : ""));
      expect(streamed.length).toBeGreaterThan(0);
      expect(streamed.join("")).toBe(call.arguments);
    }
    expect(parts.slice(-2)).toEqual([
      { type: "usage", usage: result.usage },
      { type: "finish", finishReason: "tool_calls" },
    ]);
  });
});
