import { describe, expect, it } from "vitest";
import { apiErrors } from "../../../src/gateway/api-error";
import { openResponsesStream } from "../../../src/gateway/wire/responses-stream";
import { framesOf, RecordingSink } from "./support/recording-sink";

const identity = { model: "alpha-5.4-pro", createdAtMs: 1_767_225_600_123 };
const usage = { inputTokens: 12, cachedInputTokens: 2, outputTokens: 3, reasoningTokens: 1 };

const ids = '"response_id":"resp-1767225600123"';
const part = `${ids},"item_id":"resp-1767225600123-msg","output_index":0,"content_index":0`;
const head = '"id":"resp-1767225600123","object":"response","created_at":1767225600';
const zeroUsage =
  '{"input_tokens":0,"input_tokens_details":{"cached_tokens":0},"output_tokens":0,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":0}';
const item = (status: string, content: string) =>
  `{"id":"resp-1767225600123-msg","type":"message","status":"${status}","role":"assistant","content":[${content}]}`;
const textPart = (text: string) => `{"type":"output_text","text":"${text}","annotations":[]}`;
const event = (name: string, data: string) => `event: ${name}\ndata: ${data}\n\n`;

const opening =
  event(
    "response.created",
    `{"type":"response.created","sequence_number":0,"response":{${head},"status":"in_progress","error":null,"incomplete_details":null,` +
      `"model":"alpha-5.4-pro","output_text":"","output":[${item("completed", textPart(""))}],"usage":${zeroUsage}}}`,
  ) +
  event(
    "response.in_progress",
    `{"type":"response.in_progress","sequence_number":1,${ids},"response":{${head},"status":"in_progress","error":null,` +
      `"incomplete_details":null,"model":"alpha-5.4-pro","output_text":"","output":[],"usage":${zeroUsage}}}`,
  ) +
  event(
    "response.output_item.added",
    `{"type":"response.output_item.added","sequence_number":2,${ids},"output_index":0,"item":${item("in_progress", "")}}`,
  ) +
  event(
    "response.content_part.added",
    `{"type":"response.content_part.added","sequence_number":3,${part},"part":${textPart("")}}`,
  );

describe("responses stream: the exact bytes", () => {
  it("follows the ten steps of interface.md with sequence numbers from 0 and one set of ids", () => {
    const sink = new RecordingSink();
    const stream = openResponsesStream(sink, identity);
    stream.delta("Hel");
    stream.delta("lo");
    stream.complete("stop", usage);

    expect(sink.text).toBe(
      opening +
        event(
          "response.output_text.delta",
          `{"type":"response.output_text.delta","sequence_number":4,${part},"delta":"Hel"}`,
        ) +
        event(
          "response.output_text.delta",
          `{"type":"response.output_text.delta","sequence_number":5,${part},"delta":"lo"}`,
        ) +
        event(
          "response.output_text.done",
          `{"type":"response.output_text.done","sequence_number":6,${part},"text":"Hello"}`,
        ) +
        event(
          "response.content_part.done",
          `{"type":"response.content_part.done","sequence_number":7,${part},"part":${textPart("Hello")}}`,
        ) +
        event(
          "response.output_item.done",
          `{"type":"response.output_item.done","sequence_number":8,${ids},"output_index":0,"item":${item("completed", textPart("Hello"))}}`,
        ) +
        event(
          "response.completed",
          `{"type":"response.completed","sequence_number":9,"response":{${head},"status":"completed","error":null,` +
            `"incomplete_details":null,"model":"alpha-5.4-pro","output_text":"Hello","output":[${item("completed", textPart("Hello"))}],` +
            '"usage":{"input_tokens":12,"input_tokens_details":{"cached_tokens":2},"output_tokens":3,' +
            '"output_tokens_details":{"reasoning_tokens":1},"total_tokens":15}}}',
        ) +
        "data: [DONE]\n\n",
    );
    expect(sink.ended).toBe(true);
    // The opening goes out with the first delta; then one write per delta and one for the close.
    expect(sink.writes).toHaveLength(3);
  });

  it("names every event in its JSON type and numbers them without gaps, however many deltas", () => {
    const sink = new RecordingSink();
    const stream = openResponsesStream(sink, identity);
    for (const piece of ["a", "", "b", "c\n", 'd"']) stream.delta(piece);
    stream.complete("length", usage);

    const frames = framesOf(sink.text);
    expect(frames.at(-1)).toBe("data: [DONE]");
    const events = frames.slice(0, -1).map((frame) => {
      const [eventLine, dataLine, ...rest] = frame.split("\n");
      expect(rest).toEqual([]);
      const data = JSON.parse(dataLine!.slice("data: ".length));
      expect(eventLine).toBe(`event: ${data.type}`);
      return data;
    });
    expect(events.map((data) => data.sequence_number)).toEqual(events.map((_, index) => index));
    expect(events.map((data) => data.type)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);
    const deltas = events
      .filter((data) => data.type === "response.output_text.delta")
      .map((data) => data.delta);
    expect(deltas.join("")).toBe('abc\nd"');
    expect(events.at(-1).response).toMatchObject({
      status: "incomplete",
      incomplete_details: { reason: "max_output_tokens" },
      output_text: 'abc\nd"',
    });
  });

  it("writes nothing before the first call; a stream with no text still carries every step", () => {
    const sink = new RecordingSink();
    const stream = openResponsesStream(sink, identity);
    expect(sink.writes).toEqual([]);
    stream.complete("stop", usage);
    const types = framesOf(sink.text).map((frame) => frame.split("\n")[0]);
    expect(types).toEqual([
      "event: response.created",
      "event: response.in_progress",
      "event: response.output_item.added",
      "event: response.content_part.added",
      "event: response.output_text.done",
      "event: response.content_part.done",
      "event: response.output_item.done",
      "event: response.completed",
      "data: [DONE]",
    ]);
  });
});

describe("responses stream: failure after the start", () => {
  it("is one response.failed event carrying the failed response and the C3 error body, then [DONE]", () => {
    const sink = new RecordingSink();
    const stream = openResponsesStream(sink, identity);
    stream.delta("Hel");
    stream.fail(apiErrors.upstreamFailed("upstream connection reset"));

    expect(sink.writes.slice(1).join("")).toBe(
      `${event(
        "response.failed",
        `{"type":"response.failed","sequence_number":5,"response":{${head},"status":"failed",` +
          '"error":{"code":"server_error","message":"upstream connection reset"},"incomplete_details":null,' +
          `"model":"alpha-5.4-pro","output_text":"Hel","output":[${item("incomplete", textPart("Hel"))}],"usage":null},` +
          '"error":{"message":"upstream connection reset","type":"model_processing_error","code":300},' +
          '"status":300,"message":"upstream connection reset"}',
      )}data: [DONE]\n\n`,
    );
    expect(sink.ended).toBe(true);
  });

  it("opens the stream first when it fails before any text", () => {
    const sink = new RecordingSink();
    openResponsesStream(sink, identity).fail(apiErrors.ledgerUnavailable());
    expect(sink.text.startsWith(opening)).toBe(true);
    expect(
      framesOf(sink.text)
        .slice(4)
        .map((frame) => frame.split("\n")[0]),
    ).toEqual(["event: response.failed", "data: [DONE]"]);
  });

  it("refuses any call after the stream closed (a programmer error)", () => {
    const stream = openResponsesStream(new RecordingSink(), identity);
    stream.fail(apiErrors.internal());
    expect(() => stream.delta("late")).toThrow(/already closed/);
    expect(() => stream.complete("stop", usage)).toThrow(/already closed/);
    expect(() => stream.fail(apiErrors.internal())).toThrow(/already closed/);
  });
});

describe("responses stream: function calls", () => {
  const eventsOf = (text: string) =>
    framesOf(text)
      .slice(0, -1)
      .map((frame) => JSON.parse(frame.split("\n")[1]!.slice("data: ".length)));

  it("given text then two calls, then the message closes before the first call and each call is its own item", () => {
    const sink = new RecordingSink();
    const stream = openResponsesStream(sink, identity);
    stream.delta("Checking.");
    stream.toolCallStart(0, "call_a", "get_weather");
    stream.toolCallDelta(0, '{"city":');
    stream.toolCallDelta(0, '"Seoul"}');
    stream.toolCallStart(1, "call_b", "get_time");
    stream.toolCallDelta(1, "{}");
    stream.complete("tool_calls", usage);

    const events = eventsOf(sink.text);
    expect(events.map((data) => data.sequence_number)).toEqual(events.map((_, index) => index));
    expect(events.map((data) => [data.type, data.output_index])).toEqual([
      ["response.created", undefined],
      ["response.in_progress", undefined],
      ["response.output_item.added", 0],
      ["response.content_part.added", 0],
      ["response.output_text.delta", 0],
      ["response.output_text.done", 0],
      ["response.content_part.done", 0],
      ["response.output_item.done", 0],
      ["response.output_item.added", 1],
      ["response.function_call_arguments.delta", 1],
      ["response.function_call_arguments.delta", 1],
      ["response.function_call_arguments.done", 1],
      ["response.output_item.done", 1],
      ["response.output_item.added", 2],
      ["response.function_call_arguments.delta", 2],
      ["response.function_call_arguments.done", 2],
      ["response.output_item.done", 2],
      ["response.completed", undefined],
    ]);
    const weatherItem = {
      type: "function_call",
      id: "resp-1767225600123-fc0",
      call_id: "call_a",
      name: "get_weather",
      arguments: '{"city":"Seoul"}',
      status: "completed",
    };
    expect(events[8].item).toEqual({ ...weatherItem, arguments: "", status: "in_progress" });
    expect(events[9]).toMatchObject({ item_id: "resp-1767225600123-fc0", delta: '{"city":' });
    expect(events[11]).toMatchObject({ arguments: '{"city":"Seoul"}', name: "get_weather" });
    expect(events[12].item).toEqual(weatherItem);
    expect(events.at(-1).response).toMatchObject({
      status: "completed",
      output_text: "Checking.",
      output: [
        { id: "resp-1767225600123-msg", type: "message", content: [{ text: "Checking." }] },
        weatherItem,
        { id: "resp-1767225600123-fc1", call_id: "call_b", name: "get_time", arguments: "{}" },
      ],
    });
  });

  it("given a reply of calls only, then no message item is opened or shown", () => {
    const sink = new RecordingSink();
    const stream = openResponsesStream(sink, identity);
    stream.toolCallStart(0, "call_a", "get_time");
    stream.toolCallDelta(0, "{}");
    stream.complete("tool_calls", usage);
    const events = eventsOf(sink.text);
    expect(events[0].response.output).toEqual([]);
    expect(events.some((data) => data.type.startsWith("response.content_part"))).toBe(false);
    expect(events.at(-1).response.output).toEqual([
      {
        type: "function_call",
        id: "resp-1767225600123-fc0",
        call_id: "call_a",
        name: "get_time",
        arguments: "{}",
        status: "completed",
      },
    ]);
  });

  // Clients key items by id (and send `output` back as the next input, where one id twice is refused):
  // text after a call is a message of its own, so it needs an id of its own.
  it("given text after a call, then it opens a message item whose id no other item has, and its deltas name it", () => {
    const sink = new RecordingSink();
    const stream = openResponsesStream(sink, identity);
    stream.delta("Checking.");
    stream.toolCallStart(0, "call_a", "get_time");
    stream.toolCallDelta(0, "{}");
    stream.delta("It is noon.");
    stream.complete("stop", usage);

    const events = eventsOf(sink.text);
    const output = events.at(-1).response.output as { id: string; type: string }[];
    expect(output.map((item) => item.type)).toEqual(["message", "function_call", "message"]);
    expect(new Set(output.map((item) => item.id)).size).toBe(output.length);
    const added = events.filter((data) => data.type === "response.output_item.added");
    expect(added.map((data) => [data.output_index, data.item.id])).toEqual(
      output.map((item, index) => [index, item.id]),
    );
    const deltas = events.filter((data) => data.type === "response.output_text.delta");
    expect(deltas.map((data) => [data.item_id, data.output_index, data.delta])).toEqual([
      [output[0]!.id, 0, "Checking."],
      [output[2]!.id, 2, "It is noon."],
    ]);
  });

  it("given a failure during a call, then response.failed shows the call incomplete", () => {
    const sink = new RecordingSink();
    const stream = openResponsesStream(sink, identity);
    stream.toolCallStart(0, "call_a", "get_weather");
    stream.toolCallDelta(0, '{"ci');
    stream.fail(apiErrors.upstreamFailed("upstream connection reset"));
    const failed = eventsOf(sink.text).at(-1);
    expect(failed.type).toBe("response.failed");
    expect(failed.response.output).toEqual([
      expect.objectContaining({ type: "function_call", arguments: '{"ci', status: "incomplete" }),
    ]);
  });

  it("refuses arguments for a call never started or already closed (a programmer error)", () => {
    const stream = openResponsesStream(new RecordingSink(), identity);
    expect(() => stream.toolCallDelta(0, "{}")).toThrow(/never started/);
    stream.toolCallStart(0, "call_a", "a");
    stream.toolCallStart(1, "call_b", "b");
    expect(() => stream.toolCallDelta(0, "{}")).toThrow(/after it was closed/);
  });
});
