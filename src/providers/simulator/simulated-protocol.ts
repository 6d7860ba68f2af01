import type { UpstreamProtocol } from "../provider";
import type { SimulatedMessage } from "./simulated-completion";
import type { SimulatedTurn, SimulatedTurnInput } from "./simulated-turn";

/** Where a request went: the protocol, and what generateContent carries in its path. */
export interface SimulatorRoute {
  protocol: UpstreamProtocol;
  /** generateContent only: the model and whether the method was `:streamGenerateContent`. */
  pathModel?: string;
  pathStream?: boolean;
}

/** A request reduced to what the simulated answer depends on. */
export interface SimulationInput extends Partial<Omit<SimulatedTurnInput, "messages" | "maxOutputTokens">> {
  model: string;
  messages: readonly SimulatedMessage[];
  maxOutputTokens: number | undefined;
  stream: boolean;
  /** chat-completions sends stream usage only when `stream_options.include_usage` asks for it. */
  includeStreamUsage: boolean;
}

export type ParsedSimulatorRequest = { ok: true; input: SimulationInput } | { ok: false; message: string };

export interface ReplyContext {
  /** Unique per reply, in the protocol's id style. */
  id: string;
  createdUnixSeconds: number;
  model: string;
  includeStreamUsage: boolean;
}

/** A stream, cut where faults and pacing need it: before the deltas, one frame per delta, after them. */
export interface StreamTranscript {
  readonly opening: string;
  readonly deltas: readonly string[];
  readonly closing: string;
  /**
   * Tokens each delta carries, for pacing, when the deltas are not the turn's text pieces one for one (tool
   * calls); absent, the turn's `pieceTokens` pace them.
   */
  readonly deltaTokens?: readonly number[];
  /** The protocol's own mid-stream error event, sent after `afterDeltas` deltas. */
  failure(afterDeltas: number): string;
}

/** One wire protocol as the simulator speaks it. */
export interface SimulatedProtocol {
  parseRequest(body: unknown, route: SimulatorRoute): ParsedSimulatorRequest;
  renderJson(completion: SimulatedTurn, context: ReplyContext): unknown;
  renderStream(completion: SimulatedTurn, context: ReplyContext): StreamTranscript;
  renderError(status: number, message: string): unknown;
}

/** `data: …` followed by a blank line; generateContent ends its lines with CRLF. */
export function dataFrame(payload: unknown, lineEnding: "\n" | "\r\n" = "\n"): string {
  return `data: ${JSON.stringify(payload)}${lineEnding}${lineEnding}`;
}

/** `event: name`, `data: …`, blank line: the framing of protocols that name their events. */
export function namedEventFrame(eventName: string, payload: unknown): string {
  return `event: ${eventName}\ndata: ${JSON.stringify(payload)}\n\n`;
}

/** Text of a content field that is either a string or an array of `{ type, text }` parts. */
export function contentText(
  content: string | readonly { text?: string | null | undefined }[] | null | undefined,
): string {
  if (content == null) return "";
  if (typeof content === "string") return content;
  return content.map((part) => part.text ?? "").join("");
}
