import { z } from "zod";
import { textMessage } from "../../providers/message-text";
import type { GenerationMessage } from "../../providers/provider";
import { validationErrorOf } from "../api-error";
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
 * The body of POST /llm/v1/responses (interface.md). Fields the gateway does not act on (`store`,
 * `metadata`, `user`, …) are dropped unread; a field it knows with a wrong type or value is 400/100 naming it.
 */

/**
 * One conversation item. Official clients send `{ role, content }` (easy input) or the same with
 * `type: "message"`; other item types (tool calls and their outputs, reasoning) belong to features the
 * gateway does not serve and are refused by name rather than dropped from the conversation.
 */
const inputItemSchema = z.object(
  {
    type: z.literal("message", { error: 'must be "message": only message items are supported' }).optional(),
    role: roleSchema,
    content: textContentSchema(["input_text", "output_text", "text"]),
  },
  { error: "must be an object with role and content" },
);

const inputSchema = z.preprocess(
  // A string is the user's one message: one path through validation for both shapes.
  (input) => (typeof input === "string" ? [{ role: "user", content: input }] : input),
  z
    .array(inputItemSchema, {
      error: (issue) =>
        issue.input === undefined ? "is required" : "must be a string or an array of message items",
    })
    .min(1, { error: "must contain at least one message item" }),
);

const responsesRequestSchema = z.object(
  {
    model: modelSchema,
    input: inputSchema,
    instructions: z.string({ error: "must be a string" }).nullish(),
    stream: streamSchema,
    temperature: temperatureSchema,
    top_p: topPSchema,
    max_output_tokens: outputTokensSchema,
  },
  { error: "request body must be a JSON object" },
);

/** The responses field of each optional parameter, for errors that name it. */
export const responsesParameterNames: ClientParameterNames = {
  stop: "stop",
  seed: "seed",
  presencePenalty: "presence_penalty",
  frequencyPenalty: "frequency_penalty",
  reasoningEffort: "reasoning.effort",
  user: "user",
  metadata: "metadata",
  tools: "tools",
  toolChoice: "tool_choice",
  parallelToolCalls: "parallel_tool_calls",
  outputFormat: "text.format",
  images: "input: input_image content",
};

export function parseResponsesRequest(body: unknown): ParsedGenerationRequest {
  const parsed = responsesRequestSchema.safeParse(body);
  if (!parsed.success) throw validationErrorOf(parsed.error);
  const request = parsed.data;
  const input: GenerationMessage[] = request.input.map(({ role, content }) => textMessage(role, content));
  return parsedGenerationRequestOf(
    {
      model: request.model,
      // `instructions` is the system message, ahead of the conversation (interface.md).
      messages:
        request.instructions == null ? input : [{ role: "system", content: request.instructions }, ...input],
      stream: request.stream ?? false,
    },
    { temperature: request.temperature, topP: request.top_p, maxOutputTokens: request.max_output_tokens },
  );
}
export { responsesRequestSchema };
