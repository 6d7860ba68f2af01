/**
 * Where a stream writer is. "unopened": nothing written yet, so the first frame still has to carry what
 * opens the stream. "closed": `[DONE]` was written and the sink ended; writing again is a programmer error.
 */
export type StreamWriterState = "unopened" | "open" | "closed";

export function assertNotClosed(state: StreamWriterState, action: string): void {
  if (state === "closed") throw new Error(`cannot ${action}: the stream is already closed`);
}
