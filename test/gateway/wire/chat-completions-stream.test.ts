import { describe, expect, it } from "vitest";
import { apiErrors } from "../../../src/gateway/api-error";
import { openChatCompletionsStream } from "../../../src/gateway/wire/chat-completions-stream";
import { framesOf, RecordingSink } from "./support/recording-sink";

const identity = { model: "alpha-5.4", createdAtMs: 1_767_225_600_123 };
const usage = { inputTokens: 12, cachedInputTokens: 2, outputTokens: 3, reasoningTokens: 1 };
const envelope =
  '{"id":"chatcmpl-1767225600123","object":"chat.completion.chunk","created":1767225600,"model":"alpha-5.4",';

describe("chat-completions stream: the exact bytes", () => {
  it("role on the first chunk, content chunks without usage, the last chunk with usage, then [DONE]", () => {
    const sink = new RecordingSink();
    const stream = openChatCompletionsStream(sink, identity);
    stream.delta("Hel");
    stream.delta('lo "river"\n');
    stream.complete("stop", usage);

    expect(sink.text).toBe(
      `data: ${envelope}"choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}\n\n` +
        `data: ${envelope}"choices":[{"index":0,"delta":{"content":"lo \\"river\\"\\n"},"finish_reason":null}]}\n\n` +
        `data: ${envelope}"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],` +
        `"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}\n\n` +
        "data: [DONE]\n\n",
    );
    expect(sink.ended).toBe(true);
    // One write per delta, one for the close: the edge can flush each token as it comes.
    expect(sink.writes).toHaveLength(3);
  });

  it("no chunk but the last has a usage key, and only the first has the role", () => {
    const sink = new RecordingSink();
    const stream = openChatCompletionsStream(sink, identity);
    for (const piece of ["a", "b", "c", "d"]) stream.delta(piece);
    stream.complete("length", usage);

    const frames = framesOf(sink.text);
    expect(frames.at(-1)).toBe("data: [DONE]");
    const chunks = frames.slice(0, -1).map((frame) => JSON.parse(frame.slice("data: ".length)));
    expect(chunks.map((chunk) => "usage" in chunk)).toEqual([false, false, false, false, true]);
    expect(chunks.map((chunk) => chunk.choices[0].delta.role)).toEqual([
      "assistant",
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    expect(chunks.at(-1).choices[0].finish_reason).toBe("length");
  });

  it("writes nothing before the first call, and nothing for an empty delta", () => {
    const sink = new RecordingSink();
    const stream = openChatCompletionsStream(sink, identity);
    expect(sink.writes).toEqual([]);
    stream.delta("");
    expect(sink.writes).toEqual([]);
    stream.delta("x");
    expect(sink.writes[0]).toContain('"delta":{"role":"assistant","content":"x"}');
  });

  it("a stream with no text still opens with the role, in a chunk of empty content", () => {
    const sink = new RecordingSink();
    openChatCompletionsStream(sink, identity).complete("stop", usage);
    expect(sink.text).toBe(
      `data: ${envelope}"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}\n\n` +
        `data: ${envelope}"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],` +
        `"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}\n\n` +
        "data: [DONE]\n\n",
    );
  });
});

describe("chat-completions stream: tool calls", () => {
  const chunkOf = (delta: string) =>
    `data: ${envelope}"choices":[{"index":0,"delta":${delta},"finish_reason":null}]}\n\n`;

  it("opens with the role, content null and the first call; arguments follow by index; finish_reason tool_calls", () => {
    const sink = new RecordingSink();
    const stream = openChatCompletionsStream(sink, identity);
    stream.toolCallStart(0, "call_a", "get_weather");
    stream.toolCallDelta(0, '{"city":');
    stream.toolCallDelta(0, "");
    stream.toolCallDelta(0, '"Seoul"}');
    stream.toolCallStart(1, "call_b", "get_time");
    stream.toolCallDelta(1, "{}");
    stream.complete("tool_calls", usage);

    expect(sink.text).toBe(
      chunkOf(
        '{"role":"assistant","content":null,"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":""}}]}',
      ) +
        chunkOf('{"tool_calls":[{"index":0,"function":{"arguments":"{\\"city\\":"}}]}') +
        chunkOf('{"tool_calls":[{"index":0,"function":{"arguments":"\\"Seoul\\"}"}}]}') +
        chunkOf(
          '{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"get_time","arguments":""}}]}',
        ) +
        chunkOf('{"tool_calls":[{"index":1,"function":{"arguments":"{}"}}]}') +
        `data: ${envelope}"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}],` +
        `"usage":{"prompt_tokens":12,"completion_tokens":3,"total_tokens":15}}\n\n` +
        "data: [DONE]\n\n",
    );
  });

  it("after text, a call's first chunk carries no role", () => {
    const sink = new RecordingSink();
    const stream = openChatCompletionsStream(sink, identity);
    stream.delta("Let me look.");
    stream.toolCallStart(0, "call_a", "get_weather");
    expect(sink.writes[1]).toBe(
      chunkOf(
        '{"tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"get_weather","arguments":""}}]}',
      ),
    );
  });

  it("refuses arguments before any call started (a programmer error)", () => {
    const stream = openChatCompletionsStream(new RecordingSink(), identity);
    expect(() => stream.toolCallDelta(0, "{}")).toThrow(/never started/);
  });
});

describe("chat-completions stream: failure after the start", () => {
  it("is the C3 error body in one data frame, then [DONE]", () => {
    const sink = new RecordingSink();
    const stream = openChatCompletionsStream(sink, identity);
    stream.delta("Hel");
    stream.fail(apiErrors.upstreamFailed("upstream connection reset"));
    expect(sink.writes.slice(1).join("")).toBe(
      'data: {"error":{"message":"upstream connection reset","type":"model_processing_error","code":300},' +
        '"status":300,"message":"upstream connection reset"}\n\n' +
        "data: [DONE]\n\n",
    );
    expect(sink.ended).toBe(true);
  });

  it("refuses any call after the stream closed (a programmer error)", () => {
    const stream = openChatCompletionsStream(new RecordingSink(), identity);
    stream.complete("stop", usage);
    expect(() => stream.delta("late")).toThrow(/already closed/);
    expect(() => stream.complete("stop", usage)).toThrow(/already closed/);
    expect(() => stream.fail(apiErrors.internal())).toThrow(/already closed/);
  });
});
