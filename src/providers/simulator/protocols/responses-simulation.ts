import type { z } from "zod";
import type { SimulatedMessage } from "../simulated-completion";
import {
  contentText,
  namedEventFrame,
  type ReplyContext,
  type SimulatedProtocol,
  type StreamTranscript,
} from "../simulated-protocol";
import type { SimulatedTurn } from "../simulated-turn";
import { describeIssue, responsesRequestSchema } from "./request-schemas";

type ResponseStatus = "in_progress" | "completed" | "incomplete" | "failed";

function usage(completion: SimulatedTurn) {
  return {
    input_tokens: completion.promptTokens,
    input_tokens_details: { cached_tokens: 0 },
    output_tokens: completion.outputTokens,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: completion.promptTokens + completion.outputTokens,
  };
}

function outputText(text: string) {
  return { type: "output_text", text, annotations: [], logprobs: [] };
}

function messageItem(context: ReplyContext, status: ResponseStatus, content: unknown[]) {
  return { id: `msg_${context.id}`, type: "message", status, role: "assistant", content };
}

function responseBody(
  context: ReplyContext,
  status: ResponseStatus,
  output: unknown[],
  usageBody: ReturnType<typeof usage> | null,
) {
  return {
    id: context.id,
    object: "response",
    created_at: context.createdUnixSeconds,
    status,
    background: false,
    error:
      status === "failed"
        ? { code: "server_error", message: "The model failed to generate a response." }
        : null,
    incomplete_details: status === "incomplete" ? { reason: "max_output_tokens" } : null,
    instructions: null,
    max_output_tokens: null,
    model: context.model,
    output,
    parallel_tool_calls: true,
    previous_response_id: null,
    reasoning: { effort: null, summary: null },
    store: false,
    temperature: 1,
    text: { format: { type: "text" } },
    tool_choice: "auto",
    tools: [],
    top_p: 1,
    truncation: "disabled",
    usage: usageBody,
    user: null,
    metadata: {},
  };
}

function finalStatus(completion: SimulatedTurn): ResponseStatus {
  return completion.finish === "length" ? "incomplete" : "completed";
}

function renderStream(completion: SimulatedTurn, context: ReplyContext): StreamTranscript {
  const itemId = `msg_${context.id}`;
  const status = finalStatus(completion);
  const part = { item_id: itemId, output_index: 0, content_index: 0 };
  const event = (sequenceNumber: number, type: string, fields: object) =>
    namedEventFrame(type, { type, sequence_number: sequenceNumber, ...fields });
  const inProgress = responseBody(context, "in_progress", [], null);
  const opening = [
    event(0, "response.created", { response: inProgress }),
    event(1, "response.in_progress", { response: inProgress }),
    event(2, "response.output_item.added", {
      output_index: 0,
      item: messageItem(context, "in_progress", []),
    }),
    event(3, "response.content_part.added", { ...part, part: outputText("") }),
  ].join("");
  const deltasStart = 4;
  const deltas = completion.pieces.map((piece, index) =>
    event(deltasStart + index, "response.output_text.delta", { ...part, delta: piece, logprobs: [] }),
  );
  const afterDeltas = deltasStart + deltas.length;
  const finalItem = messageItem(context, status, [outputText(completion.text)]);
  const closing = [
    event(afterDeltas, "response.output_text.done", { ...part, text: completion.text, logprobs: [] }),
    event(afterDeltas + 1, "response.content_part.done", { ...part, part: outputText(completion.text) }),
    event(afterDeltas + 2, "response.output_item.done", { output_index: 0, item: finalItem }),
    event(afterDeltas + 3, `response.${status}`, {
      response: responseBody(context, status, [finalItem], usage(completion)),
    }),
  ].join("");
  return {
    opening,
    deltas,
    closing,
    failure: (deltasSent) =>
      event(deltasStart + deltasSent, "response.failed", {
        response: responseBody(context, "failed", [], null),
      }),
  };
}

type ResponsesRequest = z.output<typeof responsesRequestSchema>;

function inputMessages(
  instructions: ResponsesRequest["instructions"],
  input: ResponsesRequest["input"],
): SimulatedMessage[] {
  const messages: SimulatedMessage[] = instructions ? [{ role: "system", text: instructions }] : [];
  if (typeof input === "string") return [...messages, { role: "user", text: input }];
  for (const item of input) {
    if (item.role === undefined) continue;
    messages.push({ role: item.role, text: contentText(item.content) });
  }
  return messages;
}

/** POST …/responses. */
export const responsesSimulation: SimulatedProtocol = {
  parseRequest(body) {
    const parsed = responsesRequestSchema.safeParse(body);
    if (!parsed.success) return { ok: false, message: describeIssue(parsed.error) };
    const request = parsed.data;
    return {
      ok: true,
      input: {
        model: request.model,
        messages: inputMessages(request.instructions, request.input),
        maxOutputTokens: request.max_output_tokens ?? undefined,
        stream: request.stream === true,
        includeStreamUsage: true,
      },
    };
  },

  renderJson(completion, context) {
    const status = finalStatus(completion);
    const item = messageItem(context, status, [outputText(completion.text)]);
    return responseBody(context, status, [item], usage(completion));
  },

  renderStream,

  renderError(status, message) {
    return {
      error: {
        message,
        type: status >= 500 ? "server_error" : "invalid_request_error",
        param: null,
        code: null,
      },
    };
  },
};
