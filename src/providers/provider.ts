/**
 * The one internal contract between the gateway and every upstream protocol. Each adapter translates a
 * GenerationRequest to its wire format and its wire format back to GenerationResult / GenerationStreamPart.
 */

export type UpstreamProtocol = "chat-completions" | "responses" | "messages" | "generate-content";

export type ModelFamily = "alpha" | "beta" | "gamma" | "delta" | "epsilon" | "zeta";

export type SamplingParameter = "temperature" | "top_p";

/**
 * An image in a user message: a URL the upstream fetches itself, or the bytes of a `data:` URL. `detail` is
 * the chat-completions hint (low / high / auto); protocols without it leave it out, and are sent only "auto"
 * (a low or high detail is refused for them: `imageDetail`).
 */
export type ImageSource = { kind: "url"; url: string } | { kind: "base64"; mediaType: string; data: string };

export type ContentPart =
  | { type: "text"; text: string }
  | { type: "image"; image: ImageSource; detail?: "auto" | "low" | "high" };

/** A function call the model made: `arguments` is the JSON text exactly as the model produced it. */
export interface ToolCall {
  id: string;
  name: string;
  arguments: string;
}

/**
 * One turn of the conversation. Tool results answer a call by its id; a protocol that names results by
 * function (generateContent) finds the name on the assistant turn that made the call.
 */
/** `name`: the participant who said it, when the client names one (only chat-completions carries it). */
export type GenerationMessage =
  | { role: "system"; content: string; name?: string }
  | { role: "user"; content: ContentPart[]; name?: string }
  | { role: "assistant"; content: string; toolCalls: ToolCall[]; name?: string }
  | { role: "tool"; toolCallId: string; content: string };

/** A function the model may call; `parameters` is a JSON Schema object, passed through as sent. */
export interface FunctionTool {
  name: string;
  description?: string;
  parameters?: Record<string, unknown>;
  /** The client asked for exact schema adherence (chat/responses `strict`). */
  strict?: boolean;
}

export type ToolChoice = "auto" | "none" | "required" | { name: string };

/** What the reply's text must be: free text, any JSON object, or JSON valid against a schema. */
export type OutputFormat =
  | { type: "text" }
  | { type: "json_object" }
  | {
      type: "json_schema";
      name: string;
      schema: Record<string, unknown>;
      description?: string;
      strict?: boolean;
    };

export type ReasoningEffort = "none" | "minimal" | "low" | "medium" | "high" | "xhigh";

/**
 * The optional parameters a client may send, by their internal names. Each protocol says which it honours
 * (`protocolParameters`); the others are refused with 400/100 naming the client's field (C12).
 */
export type GenerationParameter =
  | "stop"
  | "seed"
  | "presencePenalty"
  | "frequencyPenalty"
  | "reasoningEffort"
  | "user"
  | "metadata"
  | "tools"
  | "toolChoice"
  | "parallelToolCalls"
  | "outputFormat"
  | "images"
  /** An image's `detail` of "low" or "high"; "auto", the protocols' default, asks for nothing. */
  | "imageDetail"
  | "participantNames";

export interface GenerationRequest {
  /** Upstream model id (catalog `upstreamModelId`), not the public slug. */
  upstreamModelId: string;
  messages: GenerationMessage[];
  /** Absent when the client did not send it or the model ignores it. */
  temperature?: number;
  topP?: number;
  maxOutputTokens?: number;
  /** 1 to 4 sequences (the common bound of the protocols that have them). */
  stop?: string[];
  seed?: number;
  presencePenalty?: number;
  frequencyPenalty?: number;
  reasoningEffort?: ReasoningEffort;
  /** The end user's id, for the upstream's abuse monitoring. */
  user?: string;
  /** Up to 16 string pairs, as both client formats bound them. */
  metadata?: Record<string, string>;
  tools?: FunctionTool[];
  toolChoice?: ToolChoice;
  parallelToolCalls?: boolean;
  outputFormat?: OutputFormat;
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

/**
 * The input counts an upstream reports as its stream starts, before its final usage (messages'
 * `message_start`, every generateContent chunk): what a stream cut before its end is billed as input.
 */
export interface ReportedInput {
  inputTokens: number;
  cachedInputTokens: number | null;
}

export type FinishReason = "stop" | "length" | "content_filter" | "tool_calls" | "other";

/**
 * Tool calls stream as a start (id and name) and argument deltas, by `index`: the call's position among the
 * reply's calls, from 0. A protocol that sends a call whole sends its start and one delta.
 */
export type GenerationStreamPart =
  | { type: "text-delta"; text: string }
  /** More of the model's refusal, in protocols that say one apart from text (see GenerationResult). */
  | { type: "refusal-delta"; text: string }
  | { type: "tool-call-start"; index: number; id: string; name: string }
  | { type: "tool-call-delta"; index: number; argumentsDelta: string }
  /** Rides at the head of a batch with output, never alone; the final `usage` replaces it. */
  | { type: "input-usage"; usage: ReportedInput }
  | { type: "usage"; usage: ReportedUsage }
  | { type: "finish"; finishReason: FinishReason };

export interface GenerationResult {
  text: string;
  /**
   * The model declining to answer, in its words, where its protocol says so apart from the text
   * (chat-completions `refusal`, a responses `refusal` part); absent otherwise.
   */
  refusal?: string;
  /** In the order the model made them; empty when it made none. */
  toolCalls: ToolCall[];
  finishReason: FinishReason;
  usage: ReportedUsage | null;
}

export interface ProviderAdapter {
  readonly protocol: UpstreamProtocol;
  generate(request: GenerationRequest, signal: AbortSignal): Promise<GenerationResult>;
  /**
   * Yields text deltas, then usage (if reported) and finish, in batches: the parts of one upstream read
   * together, never an empty batch. Input counts reported before the end come as `input-usage` with the
   * first output after them. Aborting `signal` cancels the upstream call.
   */
  stream(request: GenerationRequest, signal: AbortSignal): AsyncIterable<GenerationStreamPart[]>;
}

/**
 * The request is valid, but the model's protocol cannot carry one of its values (e.g. an image URL whose
 * media type cannot be known): the client's fault, found before any upstream call, mapped to 400/100. The
 * message names the client's field.
 */
export class UnsupportedRequestError extends Error {
  override readonly name = "UnsupportedRequestError";
}

/** The upstream refused the request (4xx): the client's fault, mapped to 400/300. */
export class UpstreamRejectedError extends Error {
  override readonly name = "UpstreamRejectedError";
  constructor(
    readonly upstreamStatus: number,
    /** Already sanitised: safe to show the client. */
    message: string,
    /** What the upstream's `Retry-After` asked for (a 429), from the moment it answered; absent: nothing. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

/** The upstream failed (5xx, timeout, connection error, malformed reply): mapped to 500/300. */
export class UpstreamFailedError extends Error {
  override readonly name = "UpstreamFailedError";
  constructor(
    readonly reason: "status" | "timeout" | "connection" | "malformed" | "unavailable",
    /** Already sanitised: safe to show the client. */
    message: string,
    /**
     * The HTTP status of a failed answer (`reason` "status"). For a failure reported in a 200, the status its
     * error event stands for (a messages `overloaded_error`: 529), else absent.
     */
    readonly upstreamStatus?: number,
    /**
     * For the client: whole seconds (at least 1) until the model's next breaker probe when every endpoint is
     * open, or until the upstream's `Retry-After` when it outlasted the request's deadline (C13).
     */
    readonly retryAfterSeconds?: number,
    /** What the upstream's `Retry-After` asked for (a 500, 502, 503, 504 or 529), from the moment it answered. */
    readonly retryAfterMs?: number,
  ) {
    super(message);
  }
}

/**
 * Every attempt before output was refused with 429 (C13): answered 429 with `Retry-After` (whole seconds,
 * at least 1), app status 300.
 */
export class UpstreamThrottledError extends Error {
  override readonly name = "UpstreamThrottledError";
  constructor(
    readonly retryAfterSeconds: number,
    /** Already sanitised: safe to show the client. */
    message: string,
  ) {
    super(message);
  }
}
