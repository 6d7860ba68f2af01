import type { z } from "zod";
import type { SimulatedMessage } from "../simulated-completion";
import {
  contentText,
  namedEventFrame,
  type ReplyContext,
  type SimulatedProtocol,
  type StreamTranscript,
} from "../simulated-protocol";
import type { SimulatedOutputFormat, SimulatedToolCall, SimulatedTurn } from "../simulated-turn";
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

/** The message's one part: its text, or the model's refusal in words. */
function contentPart(completion: SimulatedTurn, text: string) {
  return completion.refused ? { type: "refusal", refusal: text } : outputText(text);
}

function messageItem(context: ReplyContext, status: ResponseStatus, content: unknown[]) {
  return { id: `msg_${context.id}`, type: "message", status, role: "assistant", content };
}

/**
 * The real API's function call item: `fc_…` names the item, `call_…` the call the output answers. In
 * progress (as `output_item.added` shows it) its arguments are still empty.
 */
function functionCallItem(
  context: ReplyContext,
  call: SimulatedToolCall,
  index: number,
  status: "in_progress" | "completed",
) {
  return {
    id: `fc_${context.id}_${index}`,
    type: "function_call",
    status,
    arguments: status === "completed" ? call.arguments : "",
    call_id: call.id,
    name: call.name,
  };
}

/** A reply made of calls has only call items; a text reply, its one message. */
function finalOutput(completion: SimulatedTurn, context: ReplyContext, status: ResponseStatus): unknown[] {
  if (completion.toolCalls.length > 0)
    return completion.toolCalls.map((call, index) => functionCallItem(context, call, index, "completed"));
  return [messageItem(context, status, [contentPart(completion, completion.text)])];
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
  return completion.toolCalls.length > 0
    ? renderCallStream(completion, context)
    : renderTextStream(completion, context);
}

const event = (sequenceNumber: number, type: string, fields: object) =>
  namedEventFrame(type, { type, sequence_number: sequenceNumber, ...fields });

function renderTextStream(completion: SimulatedTurn, context: ReplyContext): StreamTranscript {
  const itemId = `msg_${context.id}`;
  const status = finalStatus(completion);
  const part = { item_id: itemId, output_index: 0, content_index: 0 };
  const inProgress = responseBody(context, "in_progress", [], null);
  const opening = [
    event(0, "response.created", { response: inProgress }),
    event(1, "response.in_progress", { response: inProgress }),
    event(2, "response.output_item.added", {
      output_index: 0,
      item: messageItem(context, "in_progress", []),
    }),
    event(3, "response.content_part.added", { ...part, part: contentPart(completion, "") }),
  ].join("");
  const deltasStart = 4;
  const deltas = completion.pieces.map((piece, index) =>
    completion.refused
      ? event(deltasStart + index, "response.refusal.delta", { ...part, delta: piece })
      : event(deltasStart + index, "response.output_text.delta", { ...part, delta: piece, logprobs: [] }),
  );
  const afterDeltas = deltasStart + deltas.length;
  const finalItem = messageItem(context, status, [contentPart(completion, completion.text)]);
  const closing = [
    completion.refused
      ? event(afterDeltas, "response.refusal.done", { ...part, refusal: completion.text })
      : event(afterDeltas, "response.output_text.done", { ...part, text: completion.text, logprobs: [] }),
    event(afterDeltas + 1, "response.content_part.done", {
      ...part,
      part: contentPart(completion, completion.text),
    }),
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

/**
 * A reply of function calls, streamed as the real API does: per call, its item added with empty arguments,
 * the arguments in pieces, the whole arguments (with the name), the item done. Calls have no text deltas, so
 * everything after the opening is the closing.
 */
function renderCallStream(completion: SimulatedTurn, context: ReplyContext): StreamTranscript {
  const inProgress = responseBody(context, "in_progress", [], null);
  const opening =
    event(0, "response.created", { response: inProgress }) +
    event(1, "response.in_progress", { response: inProgress });
  let sequenceNumber = 2;
  const next = (type: string, fields: object) => event(sequenceNumber++, type, fields);
  let closing = "";
  completion.toolCalls.forEach((call, index) => {
    const item = functionCallItem(context, call, index, "in_progress");
    const position = { item_id: item.id, output_index: index };
    closing += next("response.output_item.added", { output_index: index, item });
    for (const piece of call.argumentPieces)
      closing += next("response.function_call_arguments.delta", { ...position, delta: piece });
    closing += next("response.function_call_arguments.done", {
      ...position,
      arguments: call.arguments,
      name: call.name,
    });
    closing += next("response.output_item.done", {
      output_index: index,
      item: functionCallItem(context, call, index, "completed"),
    });
  });
  closing += next("response.completed", {
    response: responseBody(
      context,
      "completed",
      finalOutput(completion, context, "completed"),
      usage(completion),
    ),
  });
  return {
    opening,
    deltas: [],
    closing,
    failure: () => event(2, "response.failed", { response: responseBody(context, "failed", [], null) }),
  };
}

type ResponsesRequest = z.output<typeof responsesRequestSchema>;

/** Tool results are role "tool"; a call the model made earlier is the assistant's turn, in words. */
function inputMessages(request: ResponsesRequest): { messages: SimulatedMessage[]; imageCount: number } {
  const messages: SimulatedMessage[] = request.instructions
    ? [{ role: "system", text: request.instructions }]
    : [];
  if (typeof request.input === "string")
    return { messages: [...messages, { role: "user", text: request.input }], imageCount: 0 };
  let imageCount = 0;
  for (const item of request.input) {
    if ("arguments" in item) {
      messages.push({ role: "assistant", text: `${item.name}(${item.arguments})` });
    } else if ("output" in item) {
      messages.push({ role: "tool", text: contentText(item.output) });
    } else if (item.role !== undefined) {
      const content = item.content;
      if (Array.isArray(content)) {
        imageCount += content.filter((part) => part.type === "input_image").length;
        messages.push({
          role: item.role,
          text: contentText(content.map((part) => ("text" in part ? part : {}))),
        });
      } else messages.push({ role: item.role, text: contentText(content) });
    }
  }
  return { messages, imageCount };
}

/** The real API refuses an output whose call_id names no function_call earlier in the input. */
function unansweredOutput(request: ResponsesRequest): string | undefined {
  if (typeof request.input === "string") return undefined;
  const callIds = new Set<string>();
  for (const item of request.input) {
    if ("arguments" in item) callIds.add(item.call_id);
    else if ("output" in item && !callIds.has(item.call_id))
      return `No tool call found for function call output with call_id ${item.call_id}.`;
  }
  return undefined;
}

function outputFormatOf(request: ResponsesRequest): SimulatedOutputFormat | undefined {
  const format = request.text?.format;
  if (!format || format.type === "text") return undefined;
  return format.type === "json_schema"
    ? { type: "json_schema", schema: format.schema }
    : { type: "json_object" };
}

/** POST …/responses. */
export const responsesSimulation: SimulatedProtocol = {
  parseRequest(body) {
    const parsed = responsesRequestSchema.safeParse(body);
    if (!parsed.success) return { ok: false, message: describeIssue(parsed.error) };
    const request = parsed.data;
    const unanswerable = unansweredOutput(request);
    if (unanswerable) return { ok: false, message: unanswerable };
    const { messages, imageCount } = inputMessages(request);
    const choice = request.tool_choice;
    return {
      ok: true,
      input: {
        model: request.model,
        messages,
        maxOutputTokens: request.max_output_tokens ?? undefined,
        stream: request.stream === true,
        includeStreamUsage: true,
        tools: (request.tools ?? []).map((tool) => ({
          name: tool.name,
          parameters: tool.parameters ?? undefined,
        })),
        ...(choice != null && { toolChoice: typeof choice === "string" ? choice : { name: choice.name } }),
        ...(request.parallel_tool_calls != null && { parallelToolCalls: request.parallel_tool_calls }),
        outputFormat: outputFormatOf(request),
        imageCount,
      },
    };
  },

  renderJson(completion, context) {
    const status = finalStatus(completion);
    return responseBody(context, status, finalOutput(completion, context, status), usage(completion));
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
