import { describe, expect, it } from "vitest";
import {
  parseServerSentEvents,
  type ServerSentEvent,
  ServerSentEventDecoder,
} from "../../src/providers/http/server-sent-events";
import { UpstreamFailedError } from "../../src/providers/provider";
import { asAsync, chunked } from "./support/stream-helpers";

async function parseAll(chunks: Iterable<Uint8Array | string>, eventCharactersMax?: number) {
  const events: ServerSentEvent[] = [];
  for await (const batch of parseServerSentEvents(asAsync(chunks), eventCharactersMax)) {
    expect(batch.length).toBeGreaterThan(0);
    events.push(...batch);
  }
  return events;
}

/** Every line ending, a comment, a multi-line payload, a field without a space, a BOM and Korean text. */
const transcript =
  "\uFEFF: a comment line\r\n" +
  'event: first\r\ndata: {"a":1}\r\n\r\n' +
  "data: line one\ndata: line two\n\n" +
  "data:no-space\rdata:  two spaces keep one\r\r" +
  "id: 7\nretry: 1000\nevent: greeting\ndata: 안녕하세요 🌊\n\n" +
  "data\n\n" +
  "event: no-data\n\n" +
  "data: [DONE]\n\n";

const expectedEvents: ServerSentEvent[] = [
  { event: "first", data: '{"a":1}' },
  { event: undefined, data: "line one\nline two" },
  { event: undefined, data: "no-space\n two spaces keep one" },
  { event: "greeting", data: "안녕하세요 🌊" },
  { event: undefined, data: "" },
  { event: undefined, data: "[DONE]" },
];

describe("server-sent events parser", () => {
  it("given a transcript in one chunk, then it yields each event with its name and joined data", async () => {
    expect(await parseAll([new TextEncoder().encode(transcript)])).toEqual(expectedEvents);
  });

  it("given the transcript cut at every byte boundary (inside CRLF and inside UTF-8), then nothing changes", async () => {
    const bytes = new TextEncoder().encode(transcript);
    for (const size of [1, 2, 3, 5, 7, 13]) {
      expect(await parseAll(chunked(bytes, [size])), `chunk size ${size}`).toEqual(expectedEvents);
    }
  });

  it("given a CR ending one chunk and an LF starting the next, then they form one line ending", () => {
    const decoder = new ServerSentEventDecoder();
    expect(decoder.push("data: x\r")).toEqual([]);
    expect(decoder.push("\n\r")).toEqual([]);
    expect(decoder.push("\n")).toEqual([{ event: undefined, data: "x" }]);
  });

  it("given a stream that ends without the final blank line, then the last event is still dispatched", async () => {
    expect(await parseAll(['data: {"usage":1}\n\ndata: last'])).toEqual([
      { event: undefined, data: '{"usage":1}' },
      { event: undefined, data: "last" },
    ]);
  });

  it("given an event larger than the limit, then parsing fails as malformed", async () => {
    const oversized = parseAll([`data: ${"x".repeat(100)}\n\n`], 50);
    await expect(oversized).rejects.toBeInstanceOf(UpstreamFailedError);
    await expect(oversized).rejects.toMatchObject({ reason: "malformed" });
  });

  it("given an unterminated line larger than the limit, then parsing fails instead of buffering forever", async () => {
    await expect(parseAll(["x".repeat(100)], 50)).rejects.toMatchObject({ reason: "malformed" });
  });
});
