import type { ServerResponse } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import type { StreamTranscript } from "./simulated-protocol";
import type { StreamBreakMode } from "./simulator-types";

export interface StreamPacing {
  latencyMs: number;
  /** 0 means no delay between deltas. */
  msPerToken: number;
}

export interface StreamBreak {
  afterDeltas: number;
  mode: StreamBreakMode;
}

const eventStreamHeaders = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache",
} as const;

/**
 * Writes a transcript: at once when there is neither pacing nor a break (the benchmark path: one write),
 * otherwise delta by delta, the first after `latencyMs` and each next one when the tokens before it have
 * been "generated". Stops writing as soon as the client has gone.
 */
export async function writeEventStream(
  response: ServerResponse,
  transcript: StreamTranscript,
  pieceTokens: readonly number[],
  pacing: StreamPacing,
  streamBreak: StreamBreak | undefined,
): Promise<void> {
  response.writeHead(200, eventStreamHeaders);
  if (pacing.latencyMs === 0 && pacing.msPerToken === 0 && streamBreak === undefined) {
    response.end(transcript.opening + transcript.deltas.join("") + transcript.closing);
    return;
  }
  response.write(transcript.opening);
  const deltaCount = Math.min(streamBreak?.afterDeltas ?? Number.POSITIVE_INFINITY, transcript.deltas.length);
  const firstTokenAtMs = performance.now() + pacing.latencyMs;
  let tokensSent = 0;
  for (let index = 0; index < deltaCount; index += 1) {
    await sleepUntil(firstTokenAtMs + tokensSent * pacing.msPerToken);
    if (response.destroyed) return;
    await write(response, transcript.deltas[index]!);
    // Text frames carry their own count; a tool-call frame (arguments in pieces) is paced as one token.
    tokensSent += pieceTokens[index] ?? 1;
  }
  if (response.destroyed) return;
  if (streamBreak === undefined) {
    response.end(transcript.closing);
    return;
  }
  breakStream(response, transcript, deltaCount, streamBreak.mode);
}

function breakStream(
  response: ServerResponse,
  transcript: StreamTranscript,
  deltasSent: number,
  mode: StreamBreakMode,
): void {
  switch (mode) {
    case "error-event":
      response.end(transcript.failure(deltasSent));
      return;
    case "destroy-socket":
      response.destroy();
      return;
    case "stall":
      return;
    default: {
      const unknownMode: never = mode;
      throw new Error(`unknown stream break mode: ${String(unknownMode)}`);
    }
  }
}

/** Resolves once the chunk is handed to the socket, so a following destroy cannot discard it. */
function write(response: ServerResponse, chunk: string): Promise<void> {
  return new Promise((resolve) => {
    response.write(chunk, () => resolve());
  });
}

/** Sub-millisecond waits are skipped: a timer costs more than it would pace. */
export async function sleepUntil(targetMs: number): Promise<void> {
  const waitMs = targetMs - performance.now();
  if (waitMs >= 1) await sleep(waitMs);
}
