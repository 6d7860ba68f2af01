import type { EventStreamSink } from "../../../../src/gateway/wire/event-stream-sink";

/** A sink that keeps every write, and refuses writes after end as a real response would. */
export class RecordingSink implements EventStreamSink {
  readonly writes: string[] = [];
  ended = false;

  write(chunk: string): void {
    if (this.ended) throw new Error("write after end");
    this.writes.push(chunk);
  }

  end(): void {
    if (this.ended) throw new Error("ended twice");
    this.ended = true;
  }

  get text(): string {
    return this.writes.join("");
  }
}

/** Splits a stream's text into its frames (each ends with a blank line); the last frame must be complete. */
export function framesOf(text: string): string[] {
  if (!text.endsWith("\n\n"))
    throw new Error(`stream does not end with a complete frame: ${JSON.stringify(text)}`);
  return text.slice(0, -2).split("\n\n");
}
