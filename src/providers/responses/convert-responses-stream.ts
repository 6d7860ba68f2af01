import type { ServerSentEvent } from "../http/server-sent-events";
import { reportedFailureError } from "../http/transport-errors";
import { parseUpstreamJson, parseUpstreamReply } from "../http/upstream-reply";
import { type GenerationStreamPart, UpstreamFailedError } from "../provider";
import { convertEventStream } from "../stream-conversion";
import { convertResponsesUsage } from "./convert-responses-usage";
import { mapResponsesFinishReason } from "./map-responses-finish-reason";
import {
  functionCallArgumentsDeltaEventSchema,
  functionCallArgumentsDoneEventSchema,
  functionCallItemSchema,
  outputItemEventSchema,
  outputTextDeltaEventSchema,
  type ResponseOutcome,
  responsesErrorEventSchema,
  responsesStreamEventSchema,
  responseTerminalEventSchema,
} from "./responses-schemas";

/** By output_index: the call's position among the reply's calls, and whether arguments were passed on. */
type StartedCalls = Map<number, { index: number; argumentsSent: boolean }>;

/**
 * Responses stream events to stream parts: text from `response.output_text.delta` (a refusal from
 * `response.refusal.delta`); a function call from
 * its `response.output_item.added` (id and name) and `response.function_call_arguments.delta` events; usage
 * and finish from the terminal `response.completed` / `response.incomplete`; `response.failed` and `error`
 * are failures. Calls are numbered by their order among the reply's calls, not by output_index (which counts
 * messages and reasoning items too). Arguments that arrive only whole (in `.done`, or in the item's
 * `output_item.done`) are passed on as one delta, so the call is complete whichever events the upstream sends.
 */
export function convertResponsesStream(
  batches: AsyncIterable<readonly ServerSentEvent[]>,
): AsyncGenerator<GenerationStreamPart[]> {
  let outcome: ResponseOutcome | undefined;
  const calls: StartedCalls = new Map();
  return convertEventStream(batches, {
    convert(event, parts) {
      // Read on to the end of the body after the terminal event rather than stop: the socket stays reusable.
      if (outcome !== undefined || event.data === "[DONE]") return;
      outcome = convertResponsesEvent(calls, parseUpstreamJson(event.data), parts);
    },
    outcome: () => ({
      usage: outcome?.usage ? convertResponsesUsage(outcome.usage) : null,
      finishReason: outcome ? mapResponsesFinishReason(outcome, calls.size > 0) : undefined,
    }),
  });
}

/** Adds the event's parts; answers the response's outcome when the event is the terminal one. */
function convertResponsesEvent(
  calls: StartedCalls,
  payload: unknown,
  parts: GenerationStreamPart[],
): ResponseOutcome | undefined {
  const { type } = parseUpstreamReply(responsesStreamEventSchema, payload);
  switch (type) {
    case "response.output_text.delta": {
      const { delta } = parseUpstreamReply(outputTextDeltaEventSchema, payload);
      if (delta) parts.push({ type: "text-delta", text: delta });
      return undefined;
    }
    case "response.refusal.delta": {
      const { delta } = parseUpstreamReply(outputTextDeltaEventSchema, payload);
      if (delta) parts.push({ type: "refusal-delta", text: delta });
      return undefined;
    }
    case "response.output_item.added": {
      const { output_index, item } = parseUpstreamReply(outputItemEventSchema, payload);
      if (item.type === "function_call") startCall(calls, output_index, item, parts);
      return undefined;
    }
    case "response.function_call_arguments.delta":
      sendArgumentsDelta(calls, payload, parts);
      return undefined;
    case "response.function_call_arguments.done": {
      const done = parseUpstreamReply(functionCallArgumentsDoneEventSchema, payload);
      sendWholeArguments(calls, done.output_index, done.arguments, parts);
      return undefined;
    }
    case "response.output_item.done":
      finishItem(calls, payload, parts);
      return undefined;
    case "response.completed":
    case "response.incomplete":
      return parseUpstreamReply(responseTerminalEventSchema, payload).response;
    case "response.failed": {
      // A failure must surface as one even when its body is not as documented.
      const failed = responseTerminalEventSchema.safeParse(payload);
      throw reportedFailureError(failed.success ? failed.data.response.error?.message : undefined);
    }
    case "error": {
      const error = responsesErrorEventSchema.safeParse(payload);
      throw reportedFailureError(error.success ? error.data.message : undefined);
    }
    default:
      return undefined;
  }
}

function startCall(calls: StartedCalls, outputIndex: number, item: unknown, parts: GenerationStreamPart[]) {
  const call = parseUpstreamReply(functionCallItemSchema, item);
  const started = { index: calls.size, argumentsSent: false };
  calls.set(outputIndex, started);
  parts.push({ type: "tool-call-start", index: started.index, id: call.call_id, name: call.name });
}

function sendArgumentsDelta(calls: StartedCalls, payload: unknown, parts: GenerationStreamPart[]): void {
  const { output_index, delta } = parseUpstreamReply(functionCallArgumentsDeltaEventSchema, payload);
  const call = calls.get(output_index);
  if (!call)
    throw new UpstreamFailedError(
      "malformed",
      `upstream sent arguments for output ${output_index}, which is not a function call`,
    );
  call.argumentsSent = true;
  if (delta) parts.push({ type: "tool-call-delta", index: call.index, argumentsDelta: delta });
}

/** A finished function call item: started if no `.added` came, and its arguments if none streamed. */
function finishItem(calls: StartedCalls, payload: unknown, parts: GenerationStreamPart[]): void {
  const { output_index, item } = parseUpstreamReply(outputItemEventSchema, payload);
  if (item.type !== "function_call") return;
  if (!calls.has(output_index)) startCall(calls, output_index, item, parts);
  sendWholeArguments(calls, output_index, item.arguments ?? "", parts);
}

/** Arguments that arrived whole, passed on unless deltas already carried them. */
function sendWholeArguments(
  calls: StartedCalls,
  outputIndex: number,
  argumentsText: string,
  parts: GenerationStreamPart[],
): void {
  const call = calls.get(outputIndex);
  if (!call || call.argumentsSent) return;
  call.argumentsSent = true;
  if (argumentsText !== "")
    parts.push({ type: "tool-call-delta", index: call.index, argumentsDelta: argumentsText });
}
