import { z } from "zod";
import { apiErrors, validationErrorOf } from "../api-error";
import { assertToolExchangesComplete, chatMessagesSchema } from "./chat-message-schemas";
import { responseFormatSchema, toolChoiceSchema, toolsSchema } from "./chat-tool-schemas";
import { closedObjectSchema, servedObjectSchema } from "./closed-object-schema";
import {
  endUserOf,
  includeObfuscationSchema,
  metadataSchema,
  modelSchema,
  outputTokensSchema,
  penaltySchema,
  reasoningEffortSchema,
  seedSchema,
  serviceTierSchema,
  streamSchema,
  temperatureSchema,
  topPSchema,
  userSchema,
} from "./generation-parameter-schemas";
import {
  type ClientParameterNames,
  type ParsedGenerationRequest,
  parsedGenerationRequestOf,
} from "./parsed-generation-request";
import { plainChatCompletionsRequestOf } from "./plain-chat-completions-request";

/**
 * The body of POST /llm/v1/chat/completions (interface.md), with the protocol's optional parameters (C12).
 * A field with a wrong type or value is 400/100 naming it. So is a field the gateway cannot honour — more
 * choices, log probabilities, audio, predicted outputs, token biases, web search, stored completions, the
 * deprecated `functions` — and any field the protocol does not have: the protocol's own reference refuses
 * unrecognised arguments, and a parameter dropped unread would change the answer without telling (C12).
 * Values that ask for nothing beyond the default (`n: 1`, `logprobs: false`, `logit_bias: {}`,
 * `store: false`, text-only `modalities`, `service_tier: "auto"`) are accepted.
 */

/** Stop sequences: the protocol's bound of four. */
const stopSequencesMax = 4;
const stopSchema = z
  .preprocess(
    (stop) => (typeof stop === "string" ? [stop] : stop),
    z
      .array(z.string({ error: "must be a string" }).min(1, { error: "must not be empty" }), {
        error: `must be a string or an array of 1 to ${stopSequencesMax} strings`,
      })
      .min(1, { error: `must be a string or an array of 1 to ${stopSequencesMax} strings` })
      .max(stopSequencesMax, { error: `must have at most ${stopSequencesMax} sequences` }),
  )
  .nullish();

/** A field whose every value asks for something the gateway does not serve: only its absence (or null) passes. */
function refusedSchema(reason: string) {
  return z.null({ error: `not supported: ${reason}` }).optional();
}

const refusedParameterSchemas = {
  n: z.literal(1, { error: "must be 1: the gateway returns one choice" }).nullish(),
  logprobs: z.literal(false, { error: "not supported: log probabilities are not returned" }).nullish(),
  top_logprobs: refusedSchema("log probabilities are not returned"),
  audio: refusedSchema("audio output is not served"),
  modalities: z
    .array(z.literal("text", { error: 'must be "text": audio output is not served' }), {
      error: 'must be an array of modalities ("text")',
    })
    .nullish(),
  prediction: refusedSchema("predicted outputs are not served"),
  logit_bias: z
    .record(z.string(), z.unknown(), { error: "must be an object" })
    .refine((bias) => Object.keys(bias).length === 0, {
      error: "not supported: token biases cannot be carried to every upstream",
    })
    .nullish(),
  web_search_options: refusedSchema("web search is not served"),
  store: z.literal(false, { error: "not supported: the gateway does not store completions" }).nullish(),
  // As in the responses format: "auto", the default, is accepted; a named tier is refused.
  service_tier: serviceTierSchema,
  // The deprecated pair would need the legacy reply shape (`function_call`, role "function") as well.
  functions: refusedSchema("deprecated; send tools"),
  function_call: refusedSchema("deprecated; send tool_choice"),
} as const;

const chatCompletionsRequestShape = {
  model: modelSchema,
  messages: chatMessagesSchema,
  stream: streamSchema,
  // Usage is always asked of the upstream and always sent on the last chunk (interface.md), whatever
  // `include_usage` says: a client that asks for none ignores the field, as the official clients do.
  stream_options: servedObjectSchema({
    include_usage: z.boolean({ error: "must be a boolean" }).nullish(),
    include_obfuscation: includeObfuscationSchema,
  }).nullish(),
  temperature: temperatureSchema,
  top_p: topPSchema,
  max_tokens: outputTokensSchema,
  max_completion_tokens: outputTokensSchema,
  tools: toolsSchema,
  tool_choice: toolChoiceSchema,
  parallel_tool_calls: z.boolean({ error: "must be a boolean" }).nullish(),
  response_format: responseFormatSchema,
  stop: stopSchema,
  seed: seedSchema,
  presence_penalty: penaltySchema,
  frequency_penalty: penaltySchema,
  reasoning_effort: reasoningEffortSchema,
  user: userSchema,
  safety_identifier: userSchema,
  metadata: metadataSchema,
  ...refusedParameterSchemas,
};

const chatCompletionsRequestSchema = closedObjectSchema(chatCompletionsRequestShape, {
  error: "request body must be a JSON object",
  unknownField: "not supported",
});

/** The chat-completions field of each optional parameter, for errors that name it. */
export const chatCompletionsParameterNames: ClientParameterNames = {
  stop: "stop",
  seed: "seed",
  presencePenalty: "presence_penalty",
  frequencyPenalty: "frequency_penalty",
  reasoningEffort: "reasoning_effort",
  user: "user (or safety_identifier)",
  metadata: "metadata",
  tools: "tools",
  toolChoice: "tool_choice",
  parallelToolCalls: "parallel_tool_calls",
  outputFormat: "response_format",
  images: "messages: image_url content",
  imageDetail: "messages: image_url.detail",
  participantNames: "messages: name",
};

export function parseChatCompletionsRequest(body: unknown): ParsedGenerationRequest {
  return plainChatCompletionsRequestOf(body) ?? parseChatCompletionsRequestBySchema(body);
}

/** Every body through the schema: what `parseChatCompletionsRequest` gives a body the plain reading passes on. */
export function parseChatCompletionsRequestBySchema(body: unknown): ParsedGenerationRequest {
  const parsed = chatCompletionsRequestSchema.safeParse(body);
  if (!parsed.success) throw validationErrorOf(parsed.error);
  const request = parsed.data;
  // The protocol's own rule: options of a stream mean nothing without one.
  if (request.stream_options != null && request.stream !== true)
    throw apiErrors.validation("stream_options: only allowed when stream is true");
  assertToolExchangesComplete(request.messages);
  const result = parsedGenerationRequestOf(
    { model: request.model, messages: request.messages, stream: request.stream ?? false },
    {
      temperature: request.temperature,
      topP: request.top_p,
      maxOutputTokens: maxOutputTokensOf(
        request.max_tokens ?? undefined,
        request.max_completion_tokens ?? undefined,
      ),
    },
  );
  Object.assign(result, toolParametersOf(request));
  if (request.response_format != null) result.outputFormat = request.response_format;
  if (request.stop != null) result.stop = request.stop;
  if (request.seed != null) result.seed = request.seed;
  if (request.presence_penalty != null) result.presencePenalty = request.presence_penalty;
  if (request.frequency_penalty != null) result.frequencyPenalty = request.frequency_penalty;
  if (request.reasoning_effort != null) result.reasoningEffort = request.reasoning_effort;
  const endUser = endUserOf(request.user, request.safety_identifier);
  if (endUser !== undefined) result.user = endUser;
  if (request.metadata != null) result.metadata = request.metadata;
  return result;
}

type ChatCompletionsRequest = z.output<typeof chatCompletionsRequestSchema>;

/**
 * `tool_choice` and `parallel_tool_calls` only mean something with tools. Without them, "none", "auto" and
 * either `parallel_tool_calls` ask for exactly what the model does anyway and are left out (upstreams refuse
 * them without tools); a choice that needs a tool ("required", a named function) is refused.
 */
function toolParametersOf(
  request: ChatCompletionsRequest,
): Pick<ParsedGenerationRequest, "tools" | "toolChoice" | "parallelToolCalls"> {
  const tools = request.tools ?? [];
  const choice = request.tool_choice ?? undefined;
  if (tools.length === 0) {
    if (choice === "required" || typeof choice === "object")
      throw apiErrors.validation("tool_choice: asks for a tool call, but the request has no tools");
    return {};
  }
  if (typeof choice === "object" && !tools.some((tool) => tool.name === choice.name))
    throw apiErrors.validation(`tool_choice.function.name: must be one of the tools' names`);
  return {
    tools,
    ...(choice !== undefined && { toolChoice: choice }),
    ...(request.parallel_tool_calls != null && { parallelToolCalls: request.parallel_tool_calls }),
  };
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
