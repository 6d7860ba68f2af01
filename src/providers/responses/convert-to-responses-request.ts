import { textOfMessage, textOfParts } from "../message-text";
import type {
  ContentPart,
  FunctionTool,
  GenerationMessage,
  GenerationRequest,
  OutputFormat,
  ToolChoice,
} from "../provider";
import { type ToolCallIdRule, toolCallIdWithin } from "../tool-call-ids";

/** An input item of the protocol, as the gateway sends it. */
export type ResponsesInputItem =
  | { role: "system" | "assistant"; content: string }
  | { role: "user"; content: string | ResponsesInputPart[] }
  | { type: "function_call"; call_id: string; name: string; arguments: string }
  | { type: "function_call_output"; call_id: string; output: string };

export type ResponsesInputPart =
  | { type: "input_text"; text: string }
  | { type: "input_image"; image_url: string; detail: "auto" | "low" | "high" };

export interface ResponsesFunctionTool {
  type: "function";
  name: string;
  description?: string;
  /** Required by the protocol, null when the function takes no arguments. */
  parameters: Record<string, unknown> | null;
  strict?: boolean;
}

export type ResponsesToolChoice = "auto" | "none" | "required" | { type: "function"; name: string };

export type ResponsesTextFormat =
  | { type: "text" }
  | { type: "json_object" }
  | {
      type: "json_schema";
      name: string;
      schema: Record<string, unknown>;
      description?: string;
      strict?: boolean;
    };

export interface ResponsesRequestBody {
  model: string;
  instructions?: string;
  input: ResponsesInputItem[];
  temperature?: number;
  top_p?: number;
  max_output_tokens?: number;
  tools?: ResponsesFunctionTool[];
  tool_choice?: ResponsesToolChoice;
  parallel_tool_calls?: boolean;
  text?: { format: ResponsesTextFormat };
  reasoning?: { effort: NonNullable<GenerationRequest["reasoningEffort"]> };
  metadata?: Record<string, string>;
  /** The end user's id: the protocol's current name for what it used to call `user`. */
  safety_identifier?: string;
  stream?: true;
  store: false;
}

/**
 * The leading system messages become `instructions` (the protocol's place for them); a system message
 * later in the conversation stays where it is, as a system input item, so its position is not lost.
 * `store: false`: the gateway is stateless (it never sends `previous_response_id`), so there is no reason
 * to let the upstream keep our clients' conversations. A function's `strict` is sent only when the client
 * set it: each protocol has its own default, and the upstream's is the one its client expects.
 */
export function convertToResponsesRequest(
  request: GenerationRequest,
  options: { stream: boolean },
): ResponsesRequestBody {
  const firstNonSystemIndex = request.messages.findIndex((message) => message.role !== "system");
  const leadingCount = firstNonSystemIndex === -1 ? request.messages.length : firstNonSystemIndex;
  const instructions = request.messages
    .slice(0, leadingCount)
    .map((message) => textOfMessage(message))
    .join("\n\n");
  return {
    model: request.upstreamModelId,
    ...(leadingCount > 0 && { instructions }),
    input: request.messages.slice(leadingCount).flatMap(inputItemsOf),
    ...(request.temperature !== undefined && { temperature: request.temperature }),
    ...(request.topP !== undefined && { top_p: request.topP }),
    ...(request.maxOutputTokens !== undefined && { max_output_tokens: request.maxOutputTokens }),
    ...(request.tools !== undefined && { tools: request.tools.map(functionToolOf) }),
    ...(request.toolChoice !== undefined && { tool_choice: toolChoiceOf(request.toolChoice) }),
    ...(request.parallelToolCalls !== undefined && { parallel_tool_calls: request.parallelToolCalls }),
    ...(request.outputFormat !== undefined && { text: { format: textFormatOf(request.outputFormat) } }),
    ...(request.reasoningEffort !== undefined && { reasoning: { effort: request.reasoningEffort } }),
    ...(request.metadata !== undefined && { metadata: request.metadata }),
    ...(request.user !== undefined && { safety_identifier: request.user }),
    ...(options.stream && { stream: true }),
    store: false,
  };
}

/** The protocol refuses a `call_id` over 64 characters. */
const responsesToolCallIds: ToolCallIdRule = { prefix: "call_", charactersMax: 64 };

/**
 * A turn's text and its calls are separate items in this protocol: the message first, then each call, by an
 * id the protocol takes (tool-call-ids.ts).
 */
function inputItemsOf(message: GenerationMessage): ResponsesInputItem[] {
  switch (message.role) {
    case "system":
      return [{ role: "system", content: message.content }];
    case "user":
      return [{ role: "user", content: userContentOf(message.content) }];
    case "assistant": {
      const calls = message.toolCalls.map(
        (call): ResponsesInputItem => ({
          type: "function_call",
          call_id: toolCallIdWithin(responsesToolCallIds, call.id),
          name: call.name,
          arguments: call.arguments,
        }),
      );
      return message.content === "" && calls.length > 0
        ? calls
        : [{ role: "assistant", content: message.content }, ...calls];
    }
    case "tool":
      return [
        {
          type: "function_call_output",
          call_id: toolCallIdWithin(responsesToolCallIds, message.toolCallId),
          output: message.content,
        },
      ];
    default: {
      const unknownMessage: never = message;
      throw new Error(`unknown message ${JSON.stringify(unknownMessage)}`);
    }
  }
}

/** Plain text stays a string, as before; a message with images is a list of parts in their order. */
function userContentOf(parts: readonly ContentPart[]): string | ResponsesInputPart[] {
  if (parts.every((part) => part.type === "text")) return textOfParts(parts);
  return parts.map((part): ResponsesInputPart => {
    if (part.type === "text") return { type: "input_text", text: part.text };
    const { image } = part;
    const url = image.kind === "url" ? image.url : `data:${image.mediaType};base64,${image.data}`;
    // "auto" is the protocol's default, written out because the protocol lists the field as required.
    return { type: "input_image", image_url: url, detail: part.detail ?? "auto" };
  });
}

function functionToolOf(tool: FunctionTool): ResponsesFunctionTool {
  return {
    type: "function",
    name: tool.name,
    ...(tool.description !== undefined && { description: tool.description }),
    parameters: tool.parameters ?? null,
    ...(tool.strict !== undefined && { strict: tool.strict }),
  };
}

function toolChoiceOf(choice: ToolChoice): ResponsesToolChoice {
  return typeof choice === "string" ? choice : { type: "function", name: choice.name };
}

function textFormatOf(format: OutputFormat): ResponsesTextFormat {
  switch (format.type) {
    case "text":
    case "json_object":
      return { type: format.type };
    case "json_schema":
      return {
        type: "json_schema",
        name: format.name,
        schema: format.schema,
        ...(format.description !== undefined && { description: format.description }),
        ...(format.strict !== undefined && { strict: format.strict }),
      };
    default: {
      const unknownFormat: never = format;
      throw new Error(`unknown output format ${JSON.stringify(unknownFormat)}`);
    }
  }
}
