import type { IncomingHttpHeaders } from "node:http";

/**
 * What the simulator does wrong on purpose, until changed with `setFault` (tests).
 * - status: answer every request with that HTTP status and an error body in the protocol's own shape.
 * - hang: read the request, then never answer (a timeout test).
 * - malformed-json: answer 200 with text that is not JSON (a stream: one event whose data is not JSON).
 * - unexpected-shape: answer 200 with JSON that does not follow the protocol.
 * - break-stream: send `afterDeltas` deltas, then the protocol's error event, or destroy the socket, or
 *   stall without ever finishing. Only streams break; a JSON request is answered normally.
 * - refuse: the model declines, its answer's words given as a refusal where the protocol says one apart
 *   (chat-completions `refusal`, a responses `refusal` part); the other protocols answer as usual.
 */
export type SimulatorFault =
  | { kind: "status"; status: number; message?: string }
  | { kind: "hang" }
  | { kind: "malformed-json" }
  | { kind: "unexpected-shape" }
  | { kind: "break-stream"; afterDeltas: number; mode: StreamBreakMode }
  | { kind: "refuse" };

export type StreamBreakMode = "error-event" | "destroy-socket" | "stall";

export interface SimulatorOptions {
  /** 0 (the default) picks a free port. */
  port?: number;
  host?: string;
  /** Time to the first token (a JSON reply waits this plus the generation time). Default 0. */
  latencyMs?: number;
  /** Generation speed; 0 or Infinity (the default) sends everything at once. */
  tokensPerSecond?: number;
  fault?: SimulatorFault;
}

/** How a request's connection ended: after a full answer, or closed before one (by either side). */
export type RequestEnding = "completed" | "connection-closed";

export interface RecordedRequest {
  method: string;
  /** Path and query, as received. */
  path: string;
  headers: IncomingHttpHeaders;
  /** The parsed JSON body, or the raw text when it was not JSON. */
  body: unknown;
  /** Settles when the answer was fully sent or the connection closed first (e.g. the client aborted). */
  ended: Promise<RequestEnding>;
}

export interface Simulator {
  /** Base URL to give an adapter (or an official client) as its upstream. */
  readonly url: string;
  setFault(fault: SimulatorFault | undefined): void;
  /** The most recent requests, oldest first, at most `recordedRequestsMax`. */
  recordedRequests(): readonly RecordedRequest[];
  /** How many requests it has received since it started, however many are kept. */
  receivedRequestCount(): number;
  lastRequest(): RecordedRequest | undefined;
  clearRecordedRequests(): void;
  /** Stops listening and drops every open connection, hung ones included. */
  close(): Promise<void>;
}
