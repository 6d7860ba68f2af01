import { describe, expect, it } from "vitest";
import { chatCompletionBodyOf } from "../../../src/gateway/wire/chat-completion-body";
import { chatFinishReasonOf } from "../../../src/gateway/wire/chat-finish-reason";

const reply = {
  model: "delta-4.6-sonnet",
  createdAtMs: 1_767_225_600_987,
  text: "Rivers bend because water erodes the outer bank.",
  toolCalls: [],
  finishReason: "stop" as const,
  usage: { inputTokens: 21, cachedInputTokens: 5, outputTokens: 11, reasoningTokens: 3 },
};

describe("chatCompletionBodyOf", () => {
  it("builds the body of interface.md, key for key and in its order", () => {
    expect(JSON.stringify(chatCompletionBodyOf(reply))).toBe(
      '{"id":"chatcmpl-1767225600987","object":"chat.completion","created":1767225600,"model":"delta-4.6-sonnet",' +
        '"choices":[{"index":0,"message":{"role":"assistant","content":"Rivers bend because water erodes the outer bank."},' +
        '"finish_reason":"stop"}],"usage":{"prompt_tokens":21,"completion_tokens":11,"total_tokens":32}}',
    );
  });

  it.each([
    ["stop", "stop"],
    ["length", "length"],
    ["content_filter", "content_filter"],
    ["other", "stop"],
  ] as const)("shows finish reason %s as %s", (finishReason, shown) => {
    expect(chatFinishReasonOf(finishReason)).toBe(shown);
    expect(chatCompletionBodyOf({ ...reply, finishReason }).choices[0].finish_reason).toBe(shown);
  });

  it.each([
    ["a fractional count", { ...reply.usage, outputTokens: 1.5 }],
    ["a negative count", { ...reply.usage, inputTokens: -1 }],
    ["more cached than input", { ...reply.usage, cachedInputTokens: 22 }],
    ["more reasoning than output", { ...reply.usage, reasoningTokens: 12 }],
  ])("refuses %s (a programmer error, never shown to a client)", (_case, usage) => {
    expect(() => chatCompletionBodyOf({ ...reply, usage })).toThrow();
  });

  it("shows tool calls in order as message.tool_calls, content null without text, finish_reason tool_calls", () => {
    const toolCalls = [
      { id: "call_a", name: "get_weather", arguments: '{"city":"Seoul"}' },
      { id: "call_b", name: "get_time", arguments: "{}" },
    ];
    const body = chatCompletionBodyOf({ ...reply, text: "", toolCalls, finishReason: "tool_calls" });
    expect(body.choices[0]).toStrictEqual({
      index: 0,
      message: {
        role: "assistant",
        content: null,
        tool_calls: [
          {
            id: "call_a",
            type: "function",
            function: { name: "get_weather", arguments: '{"city":"Seoul"}' },
          },
          { id: "call_b", type: "function", function: { name: "get_time", arguments: "{}" } },
        ],
      },
      finish_reason: "tool_calls",
    });
    const withText = chatCompletionBodyOf({
      ...reply,
      text: "Let me look.",
      toolCalls,
      finishReason: "tool_calls",
    });
    expect(withText.choices[0].message.content).toBe("Let me look.");
  });

  it("refuses a clock reading that is not whole milliseconds", () => {
    expect(() => chatCompletionBodyOf({ ...reply, createdAtMs: 1.5 })).toThrow(/createdAtMs/);
  });
});
