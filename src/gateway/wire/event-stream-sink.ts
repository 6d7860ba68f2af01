/**
 * Where a stream writer puts its server-sent-event text. The HTTP edge adapts its response to this (and
 * handles back-pressure itself), so the writers stay free of express and of I/O.
 */
export interface EventStreamSink {
  write(chunk: string): void;
  end(): void;
}

/** The last frame of every stream in both formats (interface.md, Events). */
export const doneFrame = "data: [DONE]\n\n";
