import type { FinishReason, ToolCall } from "../../providers/provider";
import type { ApiError } from "../api-error";
import { assertBilledUsage, type BilledUsage } from "./billed-usage";
import { type CompletedReply, type ReplyIdentity, unixSecondsOf } from "./wire-reply";

/**
 * The responses-format body (interface.md "Response") in each state it is shown in: the finished body (JSON
 * reply and `response.completed`), and the stream's `response.created`, `response.in_progress` and
 * `response.failed` bodies. Beyond interface.md (C5: added, nothing removed): `status`, `error` and
 * `incomplete_details`, the three fields a client of the protocol reads to learn how a response ended.
 *
 * Output items: the message (`resp-<ms>-msg`, interface.md), then one `function_call` item per call the model
 * made, in order, with ids in the same spirit: `resp-<ms>-fc<n>`, n the call's position from 0. A reply made
 * only of calls has no message item, as in the protocol itself: an empty assistant message would be sent
 * back as a turn by every client that replays `output` as the next request's input. A refusal is a
 * `refusal` part of the message, as the protocol shows one.
 */

export type ResponseStatus = "in_progress" | "completed" | "incomplete" | "failed";
export type MessageItemStatus = "in_progress" | "completed" | "incomplete";

export interface OutputTextPart {
  type: "output_text";
  text: string;
  annotations: [];
}

/** The model declining to answer, in its words: a part of its own, as the protocol shows a refusal. */
export interface RefusalPart {
  type: "refusal";
  refusal: string;
}

export type MessagePart = OutputTextPart | RefusalPart;

export interface MessageItem {
  id: string;
  type: "message";
  status: MessageItemStatus;
  role: "assistant";
  content: MessagePart[];
}

export type FunctionCallItemStatus = "in_progress" | "completed" | "incomplete";

export interface FunctionCallItem {
  type: "function_call";
  id: string;
  call_id: string;
  name: string;
  arguments: string;
  status: FunctionCallItemStatus;
}

export type OutputItem = MessageItem | FunctionCallItem;

export interface ResponseUsageBody {
  input_tokens: number;
  input_tokens_details: { cached_tokens: number };
  output_tokens: number;
  output_tokens_details: { reasoning_tokens: number };
  total_tokens: number;
}

/** `code` takes the protocol's value for a failure on the serving side; the gateway's own code is in `status`. */
export interface ResponseError {
  code: "server_error";
  message: string;
}

export type IncompleteReason = "max_output_tokens" | "content_filter";

export interface ResponseBody {
  id: string;
  object: "response";
  created_at: number;
  status: ResponseStatus;
  error: ResponseError | null;
  incomplete_details: { reason: IncompleteReason } | null;
  model: string;
  output_text: string;
  output: OutputItem[];
  /** Null only in the failed body: what was produced is billed, but the count is the ledger's, not the wire's. */
  usage: ResponseUsageBody | null;
}

export interface ResponseIds {
  responseId: string;
  itemId: string;
}

export function responseIdsOf(createdAtMs: number): ResponseIds {
  return { responseId: `resp-${createdAtMs}`, itemId: `resp-${createdAtMs}-msg` };
}

/** The id of the item of the reply's `index`th function call (from 0). */
export function functionCallItemIdOf(createdAtMs: number, index: number): string {
  if (!Number.isSafeInteger(index) || index < 0)
    throw new Error(`tool call index must be >= 0, got ${index}`);
  return `resp-${createdAtMs}-fc${index}`;
}

export function functionCallItemOf(
  itemId: string,
  call: ToolCall,
  status: FunctionCallItemStatus,
): FunctionCallItem {
  return {
    type: "function_call",
    id: itemId,
    call_id: call.id,
    name: call.name,
    arguments: call.arguments,
    status,
  };
}

export function outputTextPartOf(text: string): OutputTextPart {
  return { type: "output_text", text, annotations: [] };
}

export function refusalPartOf(refusal: string): RefusalPart {
  return { type: "refusal", refusal };
}

export function messageItemOf(
  itemId: string,
  status: MessageItemStatus,
  content: MessagePart[],
): MessageItem {
  return { id: itemId, type: "message", status, role: "assistant", content };
}

/**
 * The finished body. Its items are "completed" whatever the finish reason (interface.md, States); a text cut
 * short by the token limit or a content filter makes the response "incomplete" with the reason, the only
 * place this format tells a client its text was cut.
 */
export function responseBodyOf(reply: CompletedReply): ResponseBody {
  const { itemId } = responseIdsOf(reply.createdAtMs);
  const parts: MessagePart[] = [];
  if (reply.text !== "" || (!reply.refusal && reply.toolCalls.length === 0))
    parts.push(outputTextPartOf(reply.text));
  if (reply.refusal) parts.push(refusalPartOf(reply.refusal));
  const message = parts.length > 0 ? [messageItemOf(itemId, "completed", parts)] : [];
  const calls = reply.toolCalls.map((call, index) =>
    functionCallItemOf(functionCallItemIdOf(reply.createdAtMs, index), call, "completed"),
  );
  return finishedResponseBodyOf(reply, [...message, ...calls]);
}

/** The finished body around output items already built (the stream builds its own as it writes them). */
export function finishedResponseBodyOf(
  reply: Pick<CompletedReply, "model" | "createdAtMs" | "text" | "finishReason" | "usage">,
  output: OutputItem[],
): ResponseBody {
  const incompleteReason = incompleteReasonOf(reply.finishReason);
  return responseBody(reply, {
    status: incompleteReason === null ? "completed" : "incomplete",
    error: null,
    incomplete_details: incompleteReason === null ? null : { reason: incompleteReason },
    output_text: reply.text,
    output,
    usage: responseUsageOf(reply.usage),
  });
}

/**
 * `response.created`: "the response body with empty text and zero usage", whose item interface.md (States)
 * shows as completed. The response itself is still in progress. A reply that opens with a function call
 * (the stream knows when it writes this) has no message item to show, nor has one that opens with a refusal
 * (its item is not the empty text one).
 */
export function createdResponseBodyOf(
  identity: ReplyIdentity,
  opensWith: "text" | "call" | "refusal" = "text",
): ResponseBody {
  const { itemId } = responseIdsOf(identity.createdAtMs);
  return responseBody(identity, {
    status: "in_progress",
    error: null,
    incomplete_details: null,
    output_text: "",
    output: opensWith === "text" ? [messageItemOf(itemId, "completed", [outputTextPartOf("")])] : [],
    usage: zeroUsage(),
  });
}

/**
 * `response.in_progress` (C5: the in-progress body beside response_id). Its output is empty: a client that
 * rebuilds the response from events (the official client does) takes this body as its snapshot and then
 * appends the item of `response.output_item.added` at output_index 0; an item here would sit at index 0
 * instead and the deltas would land in it.
 */
export function inProgressResponseBodyOf(identity: ReplyIdentity): ResponseBody {
  return responseBody(identity, {
    status: "in_progress",
    error: null,
    incomplete_details: null,
    output_text: "",
    output: [],
    usage: zeroUsage(),
  });
}

/** `response.failed`: what was produced so far, in the items the stream wrote (the last one incomplete). */
export function failedResponseBodyOf(
  identity: ReplyIdentity,
  producedText: string,
  error: ApiError,
  output: OutputItem[],
): ResponseBody {
  return responseBody(identity, {
    status: "failed",
    error: { code: "server_error", message: error.message },
    incomplete_details: null,
    output_text: producedText,
    output,
    usage: null,
  });
}

export function responseUsageOf(usage: BilledUsage): ResponseUsageBody {
  assertBilledUsage(usage);
  return {
    input_tokens: usage.inputTokens,
    input_tokens_details: { cached_tokens: usage.cachedInputTokens },
    output_tokens: usage.outputTokens,
    output_tokens_details: { reasoning_tokens: usage.reasoningTokens },
    total_tokens: usage.inputTokens + usage.outputTokens,
  };
}

function zeroUsage(): ResponseUsageBody {
  return responseUsageOf({ inputTokens: 0, cachedInputTokens: 0, outputTokens: 0, reasoningTokens: 0 });
}

type StateFields = Pick<
  ResponseBody,
  "status" | "error" | "incomplete_details" | "output_text" | "output" | "usage"
>;

/** One key order for every state, so that the bodies read alike on the wire. */
function responseBody(identity: ReplyIdentity, fields: StateFields): ResponseBody {
  return {
    id: responseIdsOf(identity.createdAtMs).responseId,
    object: "response",
    created_at: unixSecondsOf(identity.createdAtMs),
    status: fields.status,
    error: fields.error,
    incomplete_details: fields.incomplete_details,
    model: identity.model,
    output_text: fields.output_text,
    output: fields.output,
    usage: fields.usage,
  };
}

function incompleteReasonOf(finishReason: FinishReason): IncompleteReason | null {
  switch (finishReason) {
    case "stop":
    case "tool_calls":
    case "other":
      return null;
    case "length":
      return "max_output_tokens";
    case "content_filter":
      return "content_filter";
    default: {
      const unknownReason: never = finishReason;
      throw new Error(`unknown finish reason: ${String(unknownReason)}`);
    }
  }
}
