import type { GenerationRequest, ReasoningEffort } from "../provider";
import { convertToMessagesTurns, type MessagesTurn } from "./convert-to-messages-messages";
import {
  convertToMessagesTools,
  type MessagesTool,
  type MessagesToolChoice,
} from "./convert-to-messages-tools";

/**
 * The messages protocol requires `max_tokens`; a client of the other formats may leave it out, meaning
 * "as much as the model gives". 32,000 is the largest output limit that every current model of the
 * protocol accepts (its 4-generation models allow 32,000 to 64,000), so the default neither truncates
 * long answers early nor gets the request rejected.
 */
export const messagesMaxTokensDefault = 32_000;

export type MessagesEffort = "low" | "medium" | "high" | "xhigh";

export interface MessagesRequestBody {
  model: string;
  max_tokens: number;
  system?: string;
  messages: MessagesTurn[];
  temperature?: number;
  top_p?: number;
  stop_sequences?: string[];
  metadata?: { user_id: string };
  tools?: MessagesTool[];
  tool_choice?: MessagesToolChoice;
  thinking?: { type: "adaptive" } | { type: "disabled" };
  output_config?: {
    effort?: MessagesEffort;
    format?: { type: "json_schema"; schema: Record<string, unknown> };
  };
  stream?: true;
}

/** The body, and what reading the reply needs to know about it. */
export interface MessagesRequest {
  body: MessagesRequestBody;
  /** The forced tool standing for json_object output: its input is the reply's text. */
  answerToolName: string | undefined;
}

/**
 * Reasoning effort is the protocol's adaptive thinking, its depth set by `output_config.effort`: the
 * protocol's current control. Its older `thinking.type: "enabled"` with `budget_tokens` is deprecated on
 * the 4.6 models and refused by the later ones, while adaptive thinking is accepted by every model from
 * 4.6 on (a 4.5 model takes only budgets and refuses this with a 400, which reaches the client as such
 * rather than silently thinking less). The effort scale has no "minimal": `low`, its lowest, is nearest. "none" turns
 * thinking off explicitly, since whether a model thinks when `thinking` is left out depends on the model.
 * Adaptive thinking counts toward `max_tokens`, so no budget has to be kept below it.
 * A request that answers the model's tool calls is sent with thinking off (see `thinkingOf`).
 */
const efforts: Readonly<Record<Exclude<ReasoningEffort, "none">, MessagesEffort>> = {
  minimal: "low",
  low: "low",
  medium: "medium",
  high: "high",
  xhigh: "xhigh",
};

/**
 * stop → `stop_sequences`, user → `metadata.user_id`, tools and tool choice (convert-to-messages-tools),
 * json_schema output → the protocol's native structured output `output_config.format`: decoding is held to
 * the schema, it combines with thinking and with the client's own tools (a forced tool would do neither),
 * and the reply's text is the JSON itself. json_object has no native form (see convert-to-messages-tools).
 */
export function convertToMessagesRequest(
  request: GenerationRequest,
  options: { stream: boolean },
): MessagesRequest {
  const { system, turns } = convertToMessagesTurns(request.messages);
  const { answerToolName, ...toolFields } = convertToMessagesTools(request);
  const effort = request.reasoningEffort;
  const outputFormat = request.outputFormat;
  const outputConfig: NonNullable<MessagesRequestBody["output_config"]> = {
    ...(effort !== undefined && effort !== "none" && { effort: efforts[effort] }),
    ...(outputFormat?.type === "json_schema" && {
      format: { type: "json_schema" as const, schema: outputFormat.schema },
    }),
  };
  const body: MessagesRequestBody = {
    model: request.upstreamModelId,
    max_tokens: request.maxOutputTokens ?? messagesMaxTokensDefault,
    ...(system !== undefined && { system }),
    messages: turns,
    ...(request.temperature !== undefined && { temperature: request.temperature }),
    ...(request.topP !== undefined && { top_p: request.topP }),
    ...(request.stop !== undefined && { stop_sequences: request.stop }),
    ...(request.user !== undefined && { metadata: { user_id: request.user } }),
    ...toolFields,
    ...(effort !== undefined && {
      thinking: thinkingOf(effort, turns, forcesToolUse(toolFields.tool_choice)),
    }),
    ...(Object.keys(outputConfig).length > 0 && { output_config: outputConfig }),
    ...(options.stream && { stream: true }),
  };
  return { body, answerToolName };
}

/**
 * Adaptive thinking, unless the request answers the calls of the last assistant turn: with thinking on, the
 * protocol wants that turn to start with the thinking block the model gave, and the gateway returns no
 * thinking blocks to its clients, so none can come back. Nor when a tool is forced (the client's `required` or
 * named choice, or json_object output's answer tool): the protocol refuses thinking with a forced tool, where
 * the chat-completions and responses protocols the client speaks take the pair. Disabled rather than left
 * out, since a model may think when `thinking` is absent; the model thinks again from the user's next own
 * turn. The effort stays, as it also sets how much the model spends on its text and calls.
 */
function thinkingOf(
  effort: ReasoningEffort,
  turns: readonly MessagesTurn[],
  forcesTool: boolean,
): NonNullable<MessagesRequestBody["thinking"]> {
  if (effort === "none" || forcesTool || answersToolCalls(turns)) return { type: "disabled" };
  return { type: "adaptive" };
}

function forcesToolUse(choice: MessagesToolChoice | undefined): boolean {
  return choice?.type === "any" || choice?.type === "tool";
}

/** The last assistant turn is followed only by turns holding tool results: its calls are being answered. */
function answersToolCalls(turns: readonly MessagesTurn[]): boolean {
  const lastAssistantIndex = turns.findLastIndex((turn) => turn.role === "assistant");
  if (lastAssistantIndex === -1) return false;
  const following = turns.slice(lastAssistantIndex + 1);
  return (
    following.length > 0 &&
    following.every(
      (turn) =>
        typeof turn.content !== "string" && turn.content.some((block) => block.type === "tool_result"),
    )
  );
}
