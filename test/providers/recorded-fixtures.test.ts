import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { convertChatCompletionsResponse } from "../../src/providers/chat-completions/convert-chat-completions-response";
import { convertChatCompletionsStream } from "../../src/providers/chat-completions/convert-chat-completions-stream";
import { convertGenerateContentResponse } from "../../src/providers/generate-content/convert-generate-content-response";
import { convertGenerateContentStream } from "../../src/providers/generate-content/convert-generate-content-stream";
import { parseServerSentEvents } from "../../src/providers/http/server-sent-events";
import { convertMessagesResponse } from "../../src/providers/messages/convert-messages-response";
import { convertMessagesStream } from "../../src/providers/messages/convert-messages-stream";
import {
  type GenerationStreamPart,
  type ReportedUsage,
  UpstreamFailedError,
} from "../../src/providers/provider";
import { convertResponsesResponse } from "../../src/providers/responses/convert-responses-response";
import { convertResponsesStream } from "../../src/providers/responses/convert-responses-stream";
import { asAsync, chunked, collectStream } from "./support/stream-helpers";

const fixtureDirectory = new URL("../fixtures/providers/", import.meta.url);

function readJson(name: string): unknown {
  return JSON.parse(readFileSync(new URL(name, fixtureDirectory), "utf8"));
}

type StreamConverter = (
  batches: ReturnType<typeof parseServerSentEvents>,
) => AsyncIterable<GenerationStreamPart[]>;

/** Replays a transcript cut into uneven chunks, so the fixtures also exercise chunk boundaries. */
function replay(name: string, convert: StreamConverter) {
  const bytes = readFileSync(new URL(name, fixtureDirectory));
  return collectStream(convert(parseServerSentEvents(asAsync(chunked(bytes, [7, 1, 64, 3, 250])))));
}

const deltas = (...texts: string[]): GenerationStreamPart[] =>
  texts.map((text) => ({ type: "text-delta", text }));
const usage = (
  inputTokens: number | null,
  cachedInputTokens: number | null,
  outputTokens: number | null,
  reasoningTokens: number | null,
): ReportedUsage => ({ inputTokens, cachedInputTokens, outputTokens, reasoningTokens });
/** The input counts a stream reported at its start, leading its first output. */
const inputUsage = (inputTokens: number, cachedInputTokens: number | null): GenerationStreamPart => ({
  type: "input-usage",
  usage: { inputTokens, cachedInputTokens },
});

describe("chat-completions fixtures", () => {
  it("given a completion with cached and reasoning tokens, then counts pass through unchanged (C7)", () => {
    expect(
      convertChatCompletionsResponse(readJson("chat-completions/completion-cached-reasoning.json")),
    ).toEqual({
      toolCalls: [],
      text: "Rivers bend because faster water on the outer bank erodes it while slower water on the inner bank deposits sediment.",
      finishReason: "stop",
      usage: usage(1317, 1152, 310, 256),
    });
  });

  it("given a stream with a comment, a finish chunk and a later usage chunk, then usage comes before finish", async () => {
    const { parts, error } = await replay(
      "chat-completions/stream-with-usage.sse",
      convertChatCompletionsStream,
    );
    expect(error).toBeUndefined();
    expect(parts).toEqual([
      ...deltas("Seoul", " is the", " capital."),
      { type: "usage", usage: usage(2070, 2048, 4, 0) },
      { type: "finish", finishReason: "stop" },
    ]);
  });

  it("given a stream from an upstream that ignores include_usage, then no usage part is invented", async () => {
    const { parts } = await replay(
      "chat-completions/stream-length-without-usage.sse",
      convertChatCompletionsStream,
    );
    expect(parts).toEqual([...deltas("Once upon", " a time"), { type: "finish", finishReason: "length" }]);
  });

  it("given usage in every chunk whose last is lower than an earlier one, then each count is the highest reported", async () => {
    const chunk = (content: string, usage: object) =>
      `data: ${JSON.stringify({ choices: [{ index: 0, delta: { content }, finish_reason: content === "" ? "stop" : null }], usage })}\n\n`;
    const transcript = [
      chunk("Hello", {
        prompt_tokens: 120,
        completion_tokens: 1,
        prompt_tokens_details: { cached_tokens: 100 },
      }),
      chunk(" there", { prompt_tokens: 120, completion_tokens: 2 }),
      chunk("", { prompt_tokens: 0, completion_tokens: 2 }),
      "data: [DONE]\n\n",
    ];
    const { parts } = await collectStream(
      convertChatCompletionsStream(parseServerSentEvents(asAsync(transcript))),
    );
    expect(parts).toContainEqual({ type: "usage", usage: usage(120, 100, 2, null) });
  });

  it("given an error chunk mid-stream, then the earlier deltas stand and the error follows", async () => {
    const { parts, error } = await replay(
      "chat-completions/stream-error-mid-stream.sse",
      convertChatCompletionsStream,
    );
    expect(parts).toEqual(deltas("The first", " part"));
    expect(error).toBeInstanceOf(UpstreamFailedError);
    expect((error as Error).message).toContain("The server had an error");
  });
});

describe("chat-completions fixtures: tool calls", () => {
  const weatherCall = {
    id: "call_DdmO9pD3xa9XTPNJ32zg2hcA",
    name: "get_weather",
    arguments: '{"city":"Seoul","unit":"celsius"}',
  };
  const timeCall = { id: "call_8Qm2Lr5vTz0bWq1YcK3nJx7e", name: "get_time", arguments: '{"city":"Seoul"}' };

  it("given a completion of two calls and null content, then both calls in order, no text, finish tool_calls", () => {
    expect(convertChatCompletionsResponse(readJson("chat-completions/completion-tool-calls.json"))).toEqual({
      text: "",
      toolCalls: [weatherCall, timeCall],
      finishReason: "tool_calls",
      usage: usage(96, 0, 51, 0),
    });
  });

  it("given streamed calls, then each starts with its id and name and its arguments follow by index", async () => {
    const { parts, error } = await replay(
      "chat-completions/stream-tool-calls.sse",
      convertChatCompletionsStream,
    );
    expect(error).toBeUndefined();
    expect(parts).toEqual([
      { type: "tool-call-start", index: 0, id: weatherCall.id, name: "get_weather" },
      { type: "tool-call-delta", index: 0, argumentsDelta: '{"ci' },
      { type: "tool-call-delta", index: 0, argumentsDelta: 'ty":"Se' },
      { type: "tool-call-delta", index: 0, argumentsDelta: 'oul"}' },
      { type: "tool-call-start", index: 1, id: timeCall.id, name: "get_time" },
      { type: "tool-call-delta", index: 1, argumentsDelta: '{"city":' },
      { type: "tool-call-delta", index: 1, argumentsDelta: '"Seoul"}' },
      { type: "usage", usage: usage(96, 0, 38, 0) },
      { type: "finish", finishReason: "tool_calls" },
    ]);
  });
});

describe("responses fixtures", () => {
  it("given a response with a reasoning item and two text parts, then the text joins the parts", () => {
    expect(convertResponsesResponse(readJson("responses/response-reasoning-cached.json"))).toEqual({
      toolCalls: [],
      text: "The Han River flows through Seoul into the Yellow Sea.",
      finishReason: "stop",
      usage: usage(2100, 1920, 900, 832),
    });
  });

  it("given an incomplete response cut by max_output_tokens, then the finish is length", () => {
    expect(convertResponsesResponse(readJson("responses/response-incomplete.json"))).toEqual({
      toolCalls: [],
      text: "The list begins with",
      finishReason: "length",
      usage: usage(40, 0, 16, 12),
    });
  });

  it("given a full event stream, then only text deltas, the completed usage and the finish come out", async () => {
    const { parts, error } = await replay("responses/stream-completed.sse", convertResponsesStream);
    expect(error).toBeUndefined();
    expect(parts).toEqual([
      ...deltas("Mount", " Halla is", " on Jeju."),
      { type: "usage", usage: usage(5230, 4096, 1544, 1536) },
      { type: "finish", finishReason: "stop" },
    ]);
  });

  const seoul = { id: "call_Q1xv8", name: "get_weather", arguments: '{"city":"Seoul","unit":"c"}' };
  const busan = { id: "call_R7mz2", name: "get_weather", arguments: '{"city":"Busan","unit":"c"}' };

  it("given function_call items after a reasoning item, then they are the calls by call_id, finish tool_calls", () => {
    expect(
      convertResponsesResponse(readJson("responses/response-function-calls-after-reasoning.json")),
    ).toEqual({
      toolCalls: [seoul, busan],
      text: "",
      finishReason: "tool_calls",
      usage: usage(310, 0, 180, 128),
    });
  });

  it("given streamed calls after a reasoning item, then they are numbered among the calls, not by output_index", async () => {
    const { parts, error } = await replay(
      "responses/stream-function-calls-after-reasoning.sse",
      convertResponsesStream,
    );
    expect(error).toBeUndefined();
    expect(parts).toEqual([
      { type: "tool-call-start", index: 0, id: seoul.id, name: seoul.name },
      { type: "tool-call-delta", index: 0, argumentsDelta: '{"city":' },
      { type: "tool-call-delta", index: 0, argumentsDelta: '"Seoul",' },
      { type: "tool-call-delta", index: 0, argumentsDelta: '"unit":"c"}' },
      { type: "tool-call-start", index: 1, id: busan.id, name: busan.name },
      { type: "tool-call-delta", index: 1, argumentsDelta: '{"city":"Busan",' },
      { type: "tool-call-delta", index: 1, argumentsDelta: '"unit":"c"}' },
      { type: "usage", usage: usage(310, 0, 180, 128) },
      { type: "finish", finishReason: "tool_calls" },
    ]);
  });

  it("given a call whose arguments arrive only whole (in its done item), then they are passed on as one delta", async () => {
    const item = { type: "function_call", call_id: "call_1", name: "get_time", arguments: "{}" };
    const transcript = [
      { type: "response.output_item.added", output_index: 0, item: { ...item, arguments: "" } },
      { type: "response.output_item.done", output_index: 0, item },
      { type: "response.completed", response: { status: "completed", usage: null } },
    ]
      .map((event) => `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`)
      .join("");
    const { parts } = await collectStream(
      convertResponsesStream(parseServerSentEvents(asAsync([Buffer.from(transcript)]))),
    );
    expect(parts).toEqual([
      { type: "tool-call-start", index: 0, id: "call_1", name: "get_time" },
      { type: "tool-call-delta", index: 0, argumentsDelta: "{}" },
      { type: "finish", finishReason: "tool_calls" },
    ]);
  });

  it("given response.failed mid-stream, then the deltas stand and the upstream's message follows", async () => {
    const { parts, error } = await replay("responses/stream-failed.sse", convertResponsesStream);
    expect(parts).toEqual(deltas("Partial", " answer"));
    expect(error).toMatchObject({ reason: "status", message: expect.stringContaining("invalid content") });
  });

  it("given an error event mid-stream, then the deltas stand and the error follows", async () => {
    const { parts, error } = await replay("responses/stream-error-event.sse", convertResponsesStream);
    expect(parts).toEqual(deltas("Only this"));
    expect(error).toMatchObject({
      reason: "status",
      message: expect.stringContaining("Something went wrong"),
    });
  });
});

describe("messages fixtures", () => {
  it("given a message that wrote the cache, then input adds cache creation and cached stays 0 (C7)", () => {
    expect(convertMessagesResponse(readJson("messages/message-cache-creation.json"))).toEqual({
      toolCalls: [],
      text: "The document describes the tides of the Yellow Sea.",
      finishReason: "stop",
      // 21 + 188,086 created + 0 read
      usage: usage(188_107, 0, 393, null),
    });
  });

  it("given thinking and null cache counts, then thinking is not text and null cache counts stay null", () => {
    expect(convertMessagesResponse(readJson("messages/message-thinking-max-tokens.json"))).toEqual({
      toolCalls: [],
      text: "The sum of the first hundred",
      finishReason: "length",
      usage: usage(50, null, 1024, 1000),
    });
  });

  it("given a stream that read the cache, then input is the sum of all three and output the last value", async () => {
    const { parts, error } = await replay("messages/stream-cache-read.sse", convertMessagesStream);
    expect(error).toBeUndefined();
    expect(parts).toEqual([
      inputUsage(2308, 2048),
      ...deltas("Busan is", " a port", " city."),
      // 12 uncached + 2,048 read + 248 written; output 58 replaces message_start's provisional 1
      { type: "usage", usage: usage(2308, 2048, 58, null) },
      { type: "finish", finishReason: "stop" },
    ]);
  });

  it("given an overloaded error event mid-stream, then the deltas stand and the error follows", async () => {
    const { parts, error } = await replay("messages/stream-overloaded.sse", convertMessagesStream);
    expect(parts).toEqual([inputUsage(30, 0), ...deltas("Half", " an answer")]);
    expect(error).toMatchObject({ reason: "status", message: expect.stringContaining("Overloaded") });
  });

  it("given message_delta with cumulative input counts, then they replace message_start's", async () => {
    const transcript = [
      'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":90,"cache_read_input_tokens":50,"cache_creation_input_tokens":10,"output_tokens":1}}}\n\n',
      'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}\n\n',
      'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"input_tokens":100,"output_tokens":70}}\n\n',
      'event: message_stop\ndata: {"type":"message_stop"}\n\n',
    ];
    const { parts } = await collectStream(convertMessagesStream(parseServerSentEvents(asAsync(transcript))));
    expect(parts).toContainEqual({ type: "usage", usage: usage(160, 50, 70, null) });
  });
});

describe("messages tool-use fixtures", () => {
  it("given tool_use blocks after thinking and text, then they are tool calls with their input as JSON text and finish tool_calls", () => {
    expect(convertMessagesResponse(readJson("messages/message-tool-use.json"))).toEqual({
      text: "I'll look up both.",
      toolCalls: [
        {
          id: "toolu_01D7FLrfh4GYq7yT1ULFeyMV",
          name: "get_weather",
          arguments: '{"city":"Busan","unit":"celsius"}',
        },
        { id: "toolu_01NcW3pRk8sTqHzY5vJm2XaB", name: "get_local_time", arguments: "{}" },
      ],
      finishReason: "tool_calls",
      usage: usage(612, 0, 141, 38),
    });
  });

  it("given streamed tool_use blocks at content indexes 2 and 3, then the calls are indexed 0 and 1 and a call without input gets {}", async () => {
    const { parts, error } = await replay("messages/stream-tool-use.sse", convertMessagesStream);
    expect(error).toBeUndefined();
    expect(parts).toEqual([
      inputUsage(612, 0),
      ...deltas("I'll look up both."),
      { type: "tool-call-start", index: 0, id: "toolu_01D7FLrfh4GYq7yT1ULFeyMV", name: "get_weather" },
      { type: "tool-call-delta", index: 0, argumentsDelta: '{"city": "Bu' },
      { type: "tool-call-delta", index: 0, argumentsDelta: 'san", "unit": "celsius"}' },
      { type: "tool-call-start", index: 1, id: "toolu_01NcW3pRk8sTqHzY5vJm2XaB", name: "get_local_time" },
      { type: "tool-call-delta", index: 1, argumentsDelta: "{}" },
      { type: "usage", usage: usage(612, 0, 141, 38) },
      { type: "finish", finishReason: "tool_calls" },
    ]);
  });

  it("given the fixtures read with get_weather as the json_object answer tool, then its input is the text and the rest stay calls", async () => {
    const options = { answerToolName: "get_weather" };
    const whole = convertMessagesResponse(readJson("messages/message-tool-use.json"), options);
    expect(whole.text).toBe(`I'll look up both.{"city":"Busan","unit":"celsius"}`);
    expect(whole.toolCalls.map((call) => call.name)).toEqual(["get_local_time"]);

    const { parts } = await replay("messages/stream-tool-use.sse", (batches) =>
      convertMessagesStream(batches, options),
    );
    expect(parts.filter((part) => part.type !== "usage" && part.type !== "input-usage")).toEqual([
      ...deltas("I'll look up both.", '{"city": "Bu', 'san", "unit": "celsius"}'),
      { type: "tool-call-start", index: 0, id: "toolu_01NcW3pRk8sTqHzY5vJm2XaB", name: "get_local_time" },
      { type: "tool-call-delta", index: 0, argumentsDelta: "{}" },
      { type: "finish", finishReason: "tool_calls" },
    ]);
  });
});

describe("generate-content fixtures", () => {
  it("given a reply with a thought part, then output adds thoughts, reasoning is thoughts, thoughts are not text", () => {
    expect(convertGenerateContentResponse(readJson("generate-content/response-thoughts.json"))).toEqual({
      toolCalls: [],
      text: "Tides are caused mainly by the Moon's gravity.",
      finishReason: "stop",
      // output 196 visible + 1,135 thinking; no cachedContentTokenCount: not reported, so null
      usage: usage(11, null, 1331, 1135),
    });
  });

  it("given a blocked prompt, then the finish is content_filter and unreported counts are null", () => {
    expect(convertGenerateContentResponse(readJson("generate-content/response-prompt-blocked.json"))).toEqual(
      {
        toolCalls: [],
        text: "",
        finishReason: "content_filter",
        usage: usage(9, null, null, null),
      },
    );
  });

  it("given a CRLF stream with running totals, then the last chunk's counts are the usage", async () => {
    const { parts, error } = await replay(
      "generate-content/stream-thoughts-cached.sse",
      convertGenerateContentStream,
    );
    expect(error).toBeUndefined();
    expect(parts).toEqual([
      inputUsage(4096, 2048),
      ...deltas("Jeju Island", " is volcanic", " in origin."),
      // 25 visible + 512 thinking
      { type: "usage", usage: usage(4096, 2048, 537, 512) },
      { type: "finish", finishReason: "stop" },
    ]);
  });

  it("given parallel function calls, then they are tool calls in order, the first's signature rides in its id, finish tool_calls", () => {
    const result = convertGenerateContentResponse(
      readJson("generate-content/response-function-calls-parallel.json"),
    );
    expect(result).toEqual({
      toolCalls: [
        {
          id: expect.stringMatching(/^call_[0-9a-f]{24}__thought__CiQBcsjafJ2mF0e5/),
          name: "get_weather",
          arguments: '{"city":"Seoul","unit":"celsius"}',
        },
        {
          id: expect.stringMatching(/^call_[0-9a-f]{24}$/),
          name: "get_time",
          arguments: '{"zone":"Asia/Seoul"}',
        },
      ],
      text: "",
      finishReason: "tool_calls",
      // output 42 visible + 120 thinking
      usage: usage(118, null, 162, 120),
    });
    expect(result.toolCalls[0]?.id.endsWith("m6k0j9h")).toBe(true);
  });

  it("given a call with the upstream's id and no args, then the id is kept and the arguments are {}", () => {
    expect(
      convertGenerateContentResponse(
        readJson("generate-content/response-function-call-id-without-args.json"),
      ),
    ).toEqual({
      toolCalls: [
        {
          id: "fc_6b0e2a91c4d3__thought__EjQKMgFyyNp8cW9rZV9zaWduYXR1cmVfZm9yX3Rlc3Rz",
          name: "get_time",
          arguments: "{}",
        },
      ],
      text: "Checking the clock.",
      finishReason: "tool_calls",
      usage: usage(64, null, 15, null),
    });
  });

  it("given calls in separate chunks after text, then each is a start and one whole delta, indexed across chunks", async () => {
    const { parts, error } = await replay(
      "generate-content/stream-function-calls.sse",
      convertGenerateContentStream,
    );
    expect(error).toBeUndefined();
    expect(parts).toEqual([
      inputUsage(121, null),
      ...deltas("Let me look both up."),
      {
        type: "tool-call-start",
        index: 0,
        id: expect.stringMatching(/^call_[0-9a-f]{24}__thought__CiIBcsjafDd2/),
        name: "get_weather",
      },
      { type: "tool-call-delta", index: 0, argumentsDelta: '{"city":"Busan"}' },
      {
        type: "tool-call-start",
        index: 1,
        id: expect.stringMatching(/^call_[0-9a-f]{24}$/),
        name: "get_time",
      },
      { type: "tool-call-delta", index: 1, argumentsDelta: '{"zone":"Asia/Seoul"}' },
      // 33 visible + 64 thinking
      { type: "usage", usage: usage(121, null, 97, 64) },
      { type: "finish", finishReason: "tool_calls" },
    ]);
  });

  it("given an error chunk mid-stream, then the deltas stand and the error follows", async () => {
    const { parts, error } = await replay(
      "generate-content/stream-error-chunk.sse",
      convertGenerateContentStream,
    );
    expect(parts).toEqual([inputUsage(10, null), ...deltas("Starting")]);
    expect(error).toMatchObject({ reason: "status", message: expect.stringContaining("overloaded") });
  });
});
