/**
 * The one internal contract between the gateway and every upstream protocol. Each adapter translates a
 * GenerationRequest to its wire format and its wire format back to GenerationResult / GenerationStreamPart.
 */

export type UpstreamProtocol = "chat-completions" | "responses" | "messages" | "generate-content";

export type ModelFamily = "alpha" | "beta" | "gamma" | "delta" | "epsilon" | "zeta";

export type SamplingParameter = "temperature" | "top_p";

export interface GenerationMessage {
  role: "system" | "user" | "assistant";
  content: string;
}

export interface GenerationRequest {
  /** Upstream model id (catalog `upstreamModelId`), not the public slug. */
  upstreamModelId: string;
  messages: GenerationMessage[];
  /** Absent when the client did not send it or the model ignores it. */
  temperature?: number;
  topP?: number;
  maxOutputTokens?: number;
}

/**
 * Token counts normalised to the chat-completions meaning (C7): input includes cached input, output includes
 * reasoning. `null` means the upstream did not report that count; it is never silently 0.
 */
export interface ReportedUsage {
  inputTokens: number | null;
  cachedInputTokens: number | null;
  outputTokens: number | null;
  reasoningTokens: number | null;
}

export type FinishReason = "stop" | "length" | "content_filter" | "other";

export type GenerationStreamPart =
  | { type: "text-delta"; text: string }
  | { type: "usage"; usage: ReportedUsage }
  | { type: "finish"; finishReason: FinishReason };

export interface GenerationResult {
  text: string;
  finishReason: FinishReason;
  usage: ReportedUsage | null;
}

export interface ProviderAdapter {
  readonly protocol: UpstreamProtocol;
  generate(request: GenerationRequest, signal: AbortSignal): Promise<GenerationResult>;
  /**
   * Yields text deltas, then usage (if reported) and finish, in batches: the parts of one upstream read
   * together, never an empty batch. Aborting `signal` cancels the upstream call.
   */
  stream(request: GenerationRequest, signal: AbortSignal): AsyncIterable<GenerationStreamPart[]>;
}

/** The upstream refused the request (4xx): the client's fault, mapped to 400/300. */
export class UpstreamRejectedError extends Error {
  override readonly name = "UpstreamRejectedError";
  constructor(
    readonly upstreamStatus: number,
    /** Already sanitised: safe to show the client. */
    message: string,
  ) {
    super(message);
  }
}

/** The upstream failed (5xx, timeout, connection error, malformed reply): mapped to 500/300. */
export class UpstreamFailedError extends Error {
  override readonly name = "UpstreamFailedError";
  constructor(
    readonly reason: "status" | "timeout" | "connection" | "malformed",
    /** Already sanitised: safe to show the client. */
    message: string,
  ) {
    super(message);
  }
}
