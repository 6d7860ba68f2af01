import { z } from "zod";
import { apiErrors, validationErrorOf } from "../api-error";
import { closedObjectSchema, refusedFieldSchema, servedObjectSchema } from "./closed-object-schema";
import {
  endUserOf,
  includeObfuscationSchema,
  metadataSchema,
  modelSchema,
  outputTokensSchema,
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
import { inputSchema, messagesOfInput } from "./responses-input-items";
import {
  functionToolsOf,
  outputFormatOf,
  reasoningSchema,
  textConfigSchema,
  toolChoiceOf,
  toolChoiceSchema,
  toolsSchema,
} from "./responses-tool-schemas";

/**
 * The body of POST /llm/v1/responses (interface.md, and the protocol's further parameters). Every field is
 * either served, or refused naming it with the reason (C12): the gateway is stateless (no stored responses,
 * conversations, prompts or background runs) and returns only message and function-call items. A field the
 * protocol does not have is refused too, so that a misspelt parameter is not silently without effect.
 */

const stateless = "not supported: the gateway stores no responses; send the whole conversation as input";

const responsesRequestSchema = closedObjectSchema(
  {
    model: modelSchema,
    input: inputSchema,
    instructions: z.string({ error: "must be a string" }).nullish(),
    stream: streamSchema,
    temperature: temperatureSchema,
    top_p: topPSchema,
    max_output_tokens: outputTokensSchema,
    tools: toolsSchema,
    tool_choice: toolChoiceSchema,
    parallel_tool_calls: z.boolean({ error: "must be a boolean" }).nullish(),
    text: textConfigSchema,
    reasoning: reasoningSchema,
    metadata: metadataSchema,
    user: userSchema,
    safety_identifier: userSchema,
    // What the gateway does anyway: accepted with these values, refused with any other.
    store: z
      .boolean({ error: "must be a boolean" })
      .nullish()
      .refine((store) => store !== true, {
        error: "must be false or absent: the gateway stores no responses",
      }),
    background: z
      .boolean({ error: "must be a boolean" })
      .nullish()
      .refine((background) => background !== true, {
        error: "must be false or absent: the gateway runs no background responses",
      }),
    include: z
      .array(z.string({ error: "must be an array of strings" }), { error: "must be an array of strings" })
      .nullish()
      .refine((include) => include == null || include.length === 0, {
        error: "must be empty: the gateway returns no additional output data",
      }),
    truncation: z
      .literal("disabled", {
        error: 'must be "disabled" or absent: the gateway never truncates the conversation',
      })
      .nullish(),
    service_tier: serviceTierSchema,
    stream_options: servedObjectSchema({
      include_obfuscation: includeObfuscationSchema,
    }).nullish(),
    // The protocol's stateful and upstream-specific features.
    previous_response_id: refusedFieldSchema(stateless),
    conversation: refusedFieldSchema(stateless),
    prompt: refusedFieldSchema("not supported: the gateway stores no prompt templates"),
    context_management: refusedFieldSchema("not supported: the gateway does not compact conversations"),
    top_logprobs: refusedFieldSchema("not supported: the gateway returns no log probabilities"),
    max_tool_calls: refusedFieldSchema("not supported: the gateway runs no built-in tools"),
    prompt_cache_key: refusedFieldSchema("not supported: the gateway carries no cache key upstream"),
    prompt_cache_retention: refusedFieldSchema(
      "not supported: the gateway carries no cache setting upstream",
    ),
    prompt_cache_options: refusedFieldSchema("not supported: the gateway carries no cache setting upstream"),
    moderation: refusedFieldSchema("not supported: the gateway carries no moderation setting upstream"),
  },
  { error: "request body must be a JSON object", unknownField: "is not a parameter of the responses format" },
);

/** The responses field of each optional parameter, for errors that name it. */
export const responsesParameterNames: ClientParameterNames = {
  stop: "stop",
  seed: "seed",
  presencePenalty: "presence_penalty",
  frequencyPenalty: "frequency_penalty",
  reasoningEffort: "reasoning.effort",
  user: "user (or safety_identifier)",
  metadata: "metadata",
  tools: "tools",
  toolChoice: "tool_choice",
  parallelToolCalls: "parallel_tool_calls",
  outputFormat: "text.format",
  images: "input: input_image content",
  imageDetail: "input: input_image.detail",
  // The protocol's input messages name no participant: a responses request never has one.
  participantNames: "input: name",
};

export function parseResponsesRequest(body: unknown): ParsedGenerationRequest {
  const parsed = responsesRequestSchema.safeParse(body);
  if (!parsed.success) throw validationErrorOf(parsed.error);
  const request = parsed.data;
  // The protocol's own rule, as for chat completions: options of a stream mean nothing without one.
  if (request.stream_options != null && request.stream !== true)
    throw apiErrors.validation("stream_options: only allowed when stream is true");
  const input = messagesOfInput(request.input);
  const tools = functionToolsOf(request.tools);
  const toolChoice = toolChoiceOf(request.tool_choice);
  checkToolChoice(toolChoice, tools);
  const optional = {
    reasoningEffort: request.reasoning?.effort ?? undefined,
    user: endUserOf(request.user, request.safety_identifier),
    metadata: request.metadata ?? undefined,
    tools,
    // As for chat completions: without tools, "none", "auto" and either parallel_tool_calls ask for what the
    // model does anyway, and upstreams refuse them there; they are left out.
    toolChoice: tools === undefined ? undefined : toolChoice,
    parallelToolCalls: tools === undefined ? undefined : (request.parallel_tool_calls ?? undefined),
    outputFormat: outputFormatOf(request.text),
  };
  const parsedRequest = parsedGenerationRequestOf(
    {
      model: request.model,
      // `instructions` is the system message, ahead of the conversation (interface.md).
      messages:
        request.instructions == null ? input : [{ role: "system", content: request.instructions }, ...input],
      stream: request.stream ?? false,
    },
    { temperature: request.temperature, topP: request.top_p, maxOutputTokens: request.max_output_tokens },
  );
  // Only what the client sent: an absent parameter is never sent upstream as if asked for.
  for (const [name, value] of Object.entries(optional))
    if (value !== undefined) Object.assign(parsedRequest, { [name]: value });
  return parsedRequest;
}

/** A choice that needs a tool needs one to choose from, as every upstream would answer after the hold. */
function checkToolChoice(
  toolChoice: ParsedGenerationRequest["toolChoice"],
  tools: ParsedGenerationRequest["tools"],
): void {
  if (toolChoice === undefined || toolChoice === "auto" || toolChoice === "none") return;
  if (toolChoice === "required") {
    if (tools === undefined) throw apiErrors.validation('tool_choice: "required" needs at least one tool');
    return;
  }
  if (!tools?.some((tool) => tool.name === toolChoice.name))
    throw apiErrors.validation(`tool_choice.name: no function named "${toolChoice.name}" in tools`);
}

export { responsesRequestSchema };
