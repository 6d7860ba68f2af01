import Anthropic from "@anthropic-ai/sdk";
import { betaTool } from "@anthropic-ai/sdk/helpers/beta/json-schema";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Simulator, startSimulator } from "../../src/providers/simulator/simulator";

/**
 * Tool use of the simulated messages protocol, checked with the protocol's own official client: its
 * message accumulation, partial-JSON input parsing and tool runner would fail on a drifted wire shape.
 */

let simulator: Simulator;

beforeAll(async () => {
  simulator = await startSimulator();
});
afterAll(() => simulator.close());

const client = () => new Anthropic({ apiKey: "test-key", baseURL: simulator.url, maxRetries: 0 });

const weatherTool = {
  name: "get_weather",
  description: "The current weather in a city.",
  input_schema: {
    type: "object" as const,
    properties: { city: { type: "string" }, unit: { type: "string", enum: ["celsius", "fahrenheit"] } },
    required: ["city", "unit"],
  },
};
const timeTool = {
  name: "get_time",
  description: "The local time in a city.",
  input_schema: { type: "object" as const, properties: { city: { type: "string" } }, required: ["city"] },
};
const question = { role: "user" as const, content: "What is the weather and the time in Busan?" };

describe("anthropic client: tool use against the simulator", () => {
  it("given tools and a user question, when messages.create, then tool_use blocks with object inputs and stop reason tool_use", async () => {
    const message = await client().messages.create({
      model: "delta-4.6-sonnet",
      max_tokens: 1024,
      tools: [weatherTool, timeTool],
      messages: [question],
    });

    expect(message.stop_reason).toBe("tool_use");
    expect(message.content).toEqual([
      {
        type: "tool_use",
        id: expect.stringMatching(/^toolu_[0-9a-f]{24}$/),
        name: "get_weather",
        input: { city: expect.any(String), unit: "celsius" },
        caller: { type: "direct" },
      },
      {
        type: "tool_use",
        id: expect.stringMatching(/^toolu_[0-9a-f]{24}$/),
        name: "get_time",
        input: { city: expect.any(String) },
        caller: { type: "direct" },
      },
    ]);
    expect(message.usage.output_tokens).toBeGreaterThan(0);
  });

  it("given disable_parallel_tool_use, when messages.create, then exactly one tool_use block", async () => {
    const message = await client().messages.create({
      model: "delta-4.6-sonnet",
      max_tokens: 1024,
      tools: [weatherTool, timeTool],
      tool_choice: { type: "any", disable_parallel_tool_use: true },
      messages: [question],
    });
    expect(message.content.map((block) => block.type)).toEqual(["tool_use"]);
  });

  it("given tool use, when messages.stream, then the input_json_delta events accumulate into the same inputs as the JSON reply", async () => {
    const params = {
      model: "delta-4.6-sonnet",
      max_tokens: 1024,
      tools: [weatherTool, timeTool],
      messages: [question],
    };
    const whole = await client().messages.create(params);
    const stream = client().messages.stream(params);
    const partialJson: string[] = [];
    stream.on("inputJson", (delta) => {
      partialJson.push(delta);
    });
    const final = await stream.finalMessage();

    expect(final.stop_reason).toBe("tool_use");
    expect(final.content).toEqual(whole.content);
    expect(partialJson.length).toBeGreaterThan(2);
    expect(partialJson.join("")).toBe(
      whole.content.map((block) => (block.type === "tool_use" ? JSON.stringify(block.input) : "")).join(""),
    );
    expect(final.usage.output_tokens).toBe(whole.usage.output_tokens);
  });

  it("given a tool result answered in the next user turn, when messages.create, then the model answers in text", async () => {
    const first = await client().messages.create({
      model: "delta-4.6-sonnet",
      max_tokens: 1024,
      tools: [weatherTool],
      messages: [question],
    });
    const results = first.content.flatMap((block) =>
      block.type === "tool_use"
        ? [{ type: "tool_result" as const, tool_use_id: block.id, content: "18°C, clear" }]
        : [],
    );
    const second = await client().messages.create({
      model: "delta-4.6-sonnet",
      max_tokens: 1024,
      tools: [weatherTool],
      messages: [question, { role: "assistant", content: first.content }, { role: "user", content: results }],
    });
    expect(second.stop_reason).toBe("end_turn");
    expect(second.content).toEqual([{ type: "text", text: expect.stringMatching(/\w/) }]);
  });

  it("given a tool use left without its result, then the request is refused as upstream refuses it", async () => {
    const first = await client().messages.create({
      model: "delta-4.6-sonnet",
      max_tokens: 1024,
      tools: [weatherTool],
      messages: [question],
    });
    await expect(
      client().messages.create({
        model: "delta-4.6-sonnet",
        max_tokens: 1024,
        tools: [weatherTool],
        messages: [
          question,
          { role: "assistant", content: first.content },
          { role: "user", content: "And?" },
        ],
      }),
    ).rejects.toMatchObject({
      status: 400,
      error: {
        type: "error",
        error: {
          type: "invalid_request_error",
          message: expect.stringContaining("without `tool_result` blocks"),
        },
      },
    });
  });

  describe("with thinking on, the turn whose calls are answered", () => {
    const thinking = { type: "adaptive" as const };
    const call = { type: "tool_use" as const, id: "toolu_01", name: "get_weather", input: { city: "Busan" } };
    const result = { type: "tool_result" as const, tool_use_id: "toolu_01", content: "18°C, clear" };
    const withAssistant = (
      assistant: Anthropic.ContentBlockParam[],
      after: Anthropic.MessageParam[] = [{ role: "user", content: [result] }],
      settings: { thinking?: Anthropic.ThinkingConfigParam } = { thinking },
    ) =>
      client().messages.create({
        model: "delta-4.6-sonnet",
        max_tokens: 1024,
        tools: [weatherTool],
        messages: [question, { role: "assistant", content: assistant }, ...after],
        ...settings,
      });

    it("given its thinking block dropped, when messages.create, then it is refused as upstream refuses it, naming the block found", async () => {
      await expect(withAssistant([call])).rejects.toMatchObject({
        status: 400,
        error: {
          type: "error",
          error: {
            type: "invalid_request_error",
            message: expect.stringMatching(
              /^messages\.1\.content\.0\.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`\. When `thinking` is enabled, a final `assistant` message must start with a thinking block/,
            ),
          },
        },
      });
      await expect(withAssistant([{ type: "text", text: "Let me look." }, call])).rejects.toMatchObject({
        status: 400,
        message: expect.stringContaining("but found `text`"),
      });
    });

    it("given it starts with its thinking, or thinking is off, or a new user turn follows, then the model answers", async () => {
      const thinkingBlock = { type: "thinking" as const, thinking: "Busan: weather.", signature: "c2ln" };
      const redacted = { type: "redacted_thinking" as const, data: "cmVkYWN0ZWQ=" };
      const answered = [
        await withAssistant([thinkingBlock, call]),
        await withAssistant([redacted, call]),
        await withAssistant([call], undefined, { thinking: { type: "disabled" } }),
        await withAssistant([call], undefined, {}),
        await withAssistant(
          [call],
          [
            { role: "user", content: [result] },
            { role: "assistant", content: "It is clear." },
            { role: "user", content: "And tomorrow?" },
          ],
        ),
      ];
      for (const message of answered) expect(message.stop_reason).toMatch(/^(end_turn|tool_use)$/);
    });
  });

  // The runner keeps the conversation in a server-side message thread (a beta the gateway does not use)
  // unless told otherwise; with `thread: false` it sends the whole conversation, as the gateway does.
  it("given the SDK's tool runner without a message thread, then it runs the tool, sends the result and ends on the text answer", async () => {
    const calls: unknown[] = [];
    const runner = client().beta.messages.toolRunner({
      model: "delta-4.6-sonnet",
      max_tokens: 1024,
      max_iterations: 4,
      thread: false,
      messages: [question],
      tools: [
        betaTool({
          name: "get_weather",
          description: "The current weather in a city.",
          // Written out: the helper infers the input type from the literal schema.
          inputSchema: {
            type: "object",
            properties: {
              city: { type: "string" },
              unit: { type: "string", enum: ["celsius", "fahrenheit"] },
            },
            required: ["city", "unit"],
          },
          run: (input) => {
            calls.push(input);
            return "18°C, clear";
          },
        }),
      ],
    });
    const final = await runner.runUntilDone();

    expect(calls).toEqual([{ city: expect.any(String), unit: "celsius" }]);
    expect(final.stop_reason).toBe("end_turn");
    expect(final.content).toEqual([expect.objectContaining({ type: "text" })]);
    const lastRequest = simulator.lastRequest()?.body as { messages: { role: string; content: unknown }[] };
    expect(lastRequest.messages.at(-1)).toEqual({
      role: "user",
      content: [expect.objectContaining({ type: "tool_result", content: "18°C, clear" })],
    });
  });
});
