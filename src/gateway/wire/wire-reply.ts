import type { FinishReason, ToolCall } from "../../providers/provider";
import type { ApiError } from "../api-error";
import type { BilledUsage } from "./billed-usage";

/** What the ids and envelopes of one reply depend on, in either format, streamed or not. */
export interface ReplyIdentity {
  /** The public model slug, echoed as `model`. */
  model: string;
  /** The request's start: ids are `<prefix>-<createdAtMs>` and `created` / `created_at` is its Unix second. */
  createdAtMs: number;
}

/** A finished generation, ready to be shown as one JSON body. */
export interface CompletedReply extends ReplyIdentity {
  text: string;
  /** The model declining to answer, in its words (GenerationResult.refusal); absent when it did not. */
  refusal?: string;
  /** The function calls the model made, in order; empty when it made none. */
  toolCalls: ToolCall[];
  finishReason: FinishReason;
  usage: BilledUsage;
}

export function unixSecondsOf(createdAtMs: number): number {
  if (!Number.isSafeInteger(createdAtMs) || createdAtMs < 0) {
    throw new Error(`createdAtMs must be a non-negative integer, got ${String(createdAtMs)}`);
  }
  return Math.floor(createdAtMs / 1000);
}

/**
 * A streamed reply, in either format: the edge calls `delta` per token, then exactly one of `complete` or
 * `fail`. Nothing is written before the first call, so the edge decides when the stream starts (its first
 * token) and a failure before that is still a plain JSON error.
 */
export interface ReplyStream {
  /** One text event; an empty delta writes nothing. */
  delta(text: string): void;
  /** More of the model's refusal, in this format's refusal event; an empty delta writes nothing. */
  refusalDelta(text: string): void;
  /** A function call begins: its position among the reply's calls (from 0), id and name. */
  toolCallStart(index: number, id: string, name: string): void;
  /** More of the arguments' JSON text of the call started at `index`. */
  toolCallDelta(index: number, argumentsDelta: string): void;
  /** The closing frames with the finish reason and usage, then `data: [DONE]`; ends the sink. */
  complete(finishReason: FinishReason, usage: BilledUsage): void;
  /** A failure after the stream started: this format's error frame, then `data: [DONE]`; ends the sink. */
  fail(error: ApiError): void;
}
