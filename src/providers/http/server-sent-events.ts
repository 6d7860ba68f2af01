import { upstreamLimits } from "../../kernel/limits";
import { UpstreamFailedError } from "../provider";

export interface ServerSentEvent {
  /** The `event:` field, or undefined when the event had none (the spec's default type "message"). */
  event: string | undefined;
  /** The `data:` lines joined by "\n". */
  data: string;
}

/**
 * Incremental decoder of the text/event-stream format (WHATWG HTML, "Server-sent events"): lines end in
 * CRLF, LF or CR; lines starting with ":" are comments; several `data:` lines form one multi-line payload;
 * a blank line dispatches the event. Text may be cut anywhere between two `push` calls, even inside CRLF.
 */
export class ServerSentEventDecoder {
  private buffer = "";
  private dataLines: string[] = [];
  private dataCharacters = 0;
  private eventName: string | undefined = undefined;

  constructor(private readonly eventCharactersMax: number = upstreamLimits.eventCharactersMax) {}

  push(text: string): ServerSentEvent[] {
    this.buffer += text;
    const events: ServerSentEvent[] = [];
    const lineTerminator = /\r\n?|\n/g;
    let lineStart = 0;
    for (;;) {
      const match = lineTerminator.exec(this.buffer);
      if (match === null) break;
      // A CR as the very last character may be the first half of a CRLF cut by the chunk boundary.
      if (match[0] === "\r" && match.index === this.buffer.length - 1) break;
      const event = this.processLine(this.buffer.slice(lineStart, match.index));
      if (event) events.push(event);
      lineStart = match.index + match[0].length;
    }
    this.buffer = this.buffer.slice(lineStart);
    if (this.buffer.length > this.eventCharactersMax) throw eventTooLarge();
    return events;
  }

  /**
   * End of stream. The spec discards an event that lacks its closing blank line; we dispatch it instead,
   * because a clean end after a complete `data:` line means a terse server, and the last event of a stream
   * usually carries the usage we bill.
   */
  finish(): ServerSentEvent[] {
    const events: ServerSentEvent[] = [];
    if (this.buffer.length > 0) {
      const event = this.processLine(this.buffer.replace(/\r$/, ""));
      if (event) events.push(event);
      this.buffer = "";
    }
    const pending = this.dispatch();
    if (pending) events.push(pending);
    return events;
  }

  private processLine(line: string): ServerSentEvent | undefined {
    if (line === "") return this.dispatch();
    if (line.startsWith(":")) return undefined;
    const colonIndex = line.indexOf(":");
    const field = colonIndex === -1 ? line : line.slice(0, colonIndex);
    let value = colonIndex === -1 ? "" : line.slice(colonIndex + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "data") {
      this.dataCharacters += value.length + 1;
      if (this.dataCharacters > this.eventCharactersMax) throw eventTooLarge();
      this.dataLines.push(value);
    } else if (field === "event") {
      this.eventName = value;
    }
    // `id` and `retry` only matter for reconnection, which a billed generation never does.
    return undefined;
  }

  private dispatch(): ServerSentEvent | undefined {
    const hasData = this.dataLines.length > 0;
    const event: ServerSentEvent = { event: this.eventName, data: this.dataLines.join("\n") };
    this.dataLines = [];
    this.dataCharacters = 0;
    this.eventName = undefined;
    return hasData ? event : undefined;
  }
}

function eventTooLarge(): UpstreamFailedError {
  return new UpstreamFailedError("malformed", "upstream sent a stream event larger than the gateway accepts");
}

/**
 * Decodes raw body chunks (UTF-8, possibly cut inside a character) into server-sent events, yielding the
 * events completed by each chunk together (never an empty batch).
 */
export async function* parseServerSentEvents(
  chunks: AsyncIterable<Uint8Array | string>,
  eventCharactersMax: number = upstreamLimits.eventCharactersMax,
): AsyncGenerator<ServerSentEvent[]> {
  // TextDecoder drops one leading byte-order mark, as the event-stream format requires.
  const textDecoder = new TextDecoder("utf-8");
  const eventDecoder = new ServerSentEventDecoder(eventCharactersMax);
  for await (const chunk of chunks) {
    const text = typeof chunk === "string" ? chunk : textDecoder.decode(chunk, { stream: true });
    const events = eventDecoder.push(text);
    if (events.length > 0) yield events;
  }
  const tail = textDecoder.decode();
  const last = [...(tail ? eventDecoder.push(tail) : []), ...eventDecoder.finish()];
  if (last.length > 0) yield last;
}
