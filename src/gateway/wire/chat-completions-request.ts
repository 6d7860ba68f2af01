import { z } from "zod";
import { textMessage } from "../../providers/message-text";
import { apiErrors, validationErrorOf } from "../api-error";
import {
  modelSchema,
  outputTokensSchema,
  streamSchema,
  temperatureSchema,
  topPSchema,
} from "./generation-parameter-schemas";
import { roleSchema, textContentSchema } from "./message-schemas";
import {
  type ClientParameterNames,
  type ParsedGenerationRequest,
  parsedGenerationRequestOf,
} from "./parsed-generation-request";

/**
 * The body of POST /llm/v1/chat/completions (interface.md). Fields the gateway does not act on (`n`,
 * `user`, `seed`, …) are dropped unread; a field it knows with a wrong type or value is 400/100 naming it.
 */

const messageSchema = z.object(
  { role: roleSchema, content: textContentSchema(["text"]) },
  { error: "must be an object with role and content" },
);

const chatCompletionsRequestSchema = z.object(
  {
    model: modelSchema,
    messages: z
      .array(messageSchema, {
        error: (issue) => (issue.input === undefined ? "is required" : "must be an array of messages"),
      })
      .min(1, { error: "must contain at least one message" }),
    stream: streamSchema,
    temperature: temperatureSchema,
    top_p: topPSchema,
    max_tokens: outputTokensSchema,
    max_completion_tokens: outputTokensSchema,
    // Accepted for compatibility; usage is always asked of the upstream and always sent on the last chunk.
    stream_options: z.object({}, { error: "must be an object" }).nullish(),
  },
  { error: "request body must be a JSON object" },
);

/** The chat-completions field of each optional parameter, for errors that name it. */
export const chatCompletionsParameterNames: ClientParameterNames = {
  stop: "stop",
  seed: "seed",
  presencePenalty: "presence_penalty",
  frequencyPenalty: "frequency_penalty",
  reasoningEffort: "reasoning_effort",
  user: "user",
  metadata: "metadata",
  tools: "tools",
  toolChoice: "tool_choice",
  parallelToolCalls: "parallel_tool_calls",
  outputFormat: "response_format",
  images: "messages: image_url content",
};

export function parseChatCompletionsRequest(body: unknown): ParsedGenerationRequest {
  const parsed = chatCompletionsRequestSchema.safeParse(body);
  if (!parsed.success) throw validationErrorOf(parsed.error);
  const request = parsed.data;
  return parsedGenerationRequestOf(
    {
      model: request.model,
      messages: request.messages.map(({ role, content }) => textMessage(role, content)),
      stream: request.stream ?? false,
    },
    {
      temperature: request.temperature,
      topP: request.top_p,
      maxOutputTokens: maxOutputTokensOf(
        request.max_tokens ?? undefined,
        request.max_completion_tokens ?? undefined,
      ),
    },
  );
}

/**
 * `max_completion_tokens` is the protocol's current name and `max_tokens` its deprecated one; official clients
 * send one or the other. Both with the same value is harmless; both with different values has no meaning
 * we could pick without guessing, so the client is told.
 */
function maxOutputTokensOf(maxTokens: number | undefined, maxCompletionTokens: number | undefined) {
  if (maxTokens !== undefined && maxCompletionTokens !== undefined && maxTokens !== maxCompletionTokens) {
    throw apiErrors.validation("max_tokens: conflicts with max_completion_tokens; send only one of them");
  }
  return maxCompletionTokens ?? maxTokens;
}

export { chatCompletionsRequestSchema };
