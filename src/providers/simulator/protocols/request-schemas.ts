import { z } from "zod";

/** What the simulator accepts, per protocol: the fields its answer depends on, validated as upstream would. */

const textPartsSchema = z.array(z.object({ type: z.string().optional(), text: z.string().nullish() }));
const tokenLimitSchema = z.number().int().positive();
/** Each protocol's sampling ranges, as its upstream refuses values outside them. */
const temperatureUpTo = (maximum: number) => z.number().min(0).max(maximum).nullish();
const topPSchema = z.number().min(0).max(1).nullish();

/**
 * Call ids as each upstream checks them: chat completions and responses by length (the official API's
 * limits), messages by its pattern. An id only pairs a call with its result, but one minted elsewhere (a
 * generateContent call's id carries its thought signature) is refused all the same.
 */
const idOfAtMost = (charactersMax: number) =>
  z
    .string()
    .min(1)
    .max(charactersMax, { error: `string too long. Expected a string with maximum length ${charactersMax}` });
const messagesToolUseIdSchema = z
  .string()
  .regex(/^[a-zA-Z0-9_-]+$/, { error: "String should match pattern '^[a-zA-Z0-9_-]+$'" });

const chatContentPartSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("text"), text: z.string() }),
  z.object({
    type: z.literal("image_url"),
    image_url: z.object({ url: z.string().min(1), detail: z.enum(["auto", "low", "high"]).optional() }),
  }),
]);

const chatMessageSchema = z
  .object({
    role: z.enum(["system", "developer", "user", "assistant", "tool"]),
    content: z.union([z.string(), z.array(chatContentPartSchema)]).nullish(),
    tool_calls: z
      .array(
        z.object({
          id: idOfAtMost(40),
          type: z.literal("function"),
          function: z.object({ name: z.string().min(1), arguments: z.string() }),
        }),
      )
      .nullish(),
    tool_call_id: idOfAtMost(40).nullish(),
    name: z.string().min(1).nullish(),
  })
  .refine((message) => message.role !== "tool" || message.tool_call_id, {
    message: "messages with role 'tool' must have a tool_call_id",
  });

const functionNameSchema = z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/);

export const chatCompletionsRequestSchema = z
  .object({
    model: z.string().min(1),
    messages: z.array(chatMessageSchema).min(1),
    max_completion_tokens: tokenLimitSchema.nullish(),
    max_tokens: tokenLimitSchema.nullish(),
    temperature: temperatureUpTo(2),
    top_p: topPSchema,
    stream: z.boolean().nullish(),
    stream_options: z.object({ include_usage: z.boolean().nullish() }).nullish(),
    tools: z
      .array(
        z.object({
          type: z.literal("function"),
          function: z.object({
            name: functionNameSchema,
            description: z.string().optional(),
            parameters: z.record(z.string(), z.unknown()).optional(),
            strict: z.boolean().nullish(),
          }),
        }),
      )
      .nullish(),
    tool_choice: z
      .union([
        z.enum(["none", "auto", "required"]),
        z.object({ type: z.literal("function"), function: z.object({ name: z.string() }) }),
      ])
      .nullish(),
    parallel_tool_calls: z.boolean().nullish(),
    store: z.boolean().nullish(),
    metadata: z.record(z.string(), z.string()).nullish(),
    response_format: z
      .discriminatedUnion("type", [
        z.object({ type: z.literal("text") }),
        z.object({ type: z.literal("json_object") }),
        z.object({
          type: z.literal("json_schema"),
          json_schema: z.object({
            name: functionNameSchema,
            schema: z.record(z.string(), z.unknown()).optional(),
            strict: z.boolean().nullish(),
            description: z.string().optional(),
          }),
        }),
      ])
      .nullish(),
  })
  // The upstream's own rule, so a gateway that sends these without tools is caught here as it would be there.
  .refine((request) => request.tool_choice == null || (request.tools ?? []).length > 0, {
    message: "'tool_choice' is only allowed when 'tools' are specified",
    path: ["tool_choice"],
  })
  .refine((request) => request.parallel_tool_calls == null || (request.tools ?? []).length > 0, {
    message: "'parallel_tool_calls' is only allowed when 'tools' are specified",
    path: ["parallel_tool_calls"],
  })
  // Metadata tags stored completions: without `store: true` the upstream refuses it.
  .refine((request) => request.metadata == null || request.store === true, {
    message: "The 'metadata' parameter is only allowed when 'store' is enabled.",
    path: ["metadata"],
  });

/** A responses content part: text of any text type, or an image the real API would fetch or decode. */
const responsesPartSchema = z.union([
  z.object({ type: z.literal("input_image"), image_url: z.string().min(1), detail: z.string().nullish() }),
  z.object({ type: z.string(), text: z.string().nullish() }),
]);

const responsesInputItemSchema = z.union([
  z.object({
    type: z.literal("function_call"),
    call_id: idOfAtMost(64),
    name: z.string().min(1),
    arguments: z.string(),
  }),
  z.object({
    type: z.literal("function_call_output"),
    call_id: idOfAtMost(64),
    output: z.union([z.string(), textPartsSchema]),
  }),
  // Messages, with or without `type: "message"`; other items (reasoning) have no role and add no text here.
  // A call or its output failing its own shape above is refused, not read as one of these.
  z.object({
    type: z
      .string()
      .refine((type) => type !== "function_call" && type !== "function_call_output")
      .optional(),
    role: z.string().optional(),
    content: z.union([z.string(), z.array(responsesPartSchema)]).nullish(),
  }),
]);

const responsesFormatSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("text") }),
  z.object({ type: z.literal("json_object") }),
  z.object({
    type: z.literal("json_schema"),
    name: z.string().min(1),
    schema: z.record(z.string(), z.unknown()),
  }),
]);

export const responsesRequestSchema = z.object({
  model: z.string().min(1),
  instructions: z.string().nullish(),
  input: z.union([z.string(), z.array(responsesInputItemSchema)]),
  max_output_tokens: tokenLimitSchema.nullish(),
  temperature: temperatureUpTo(2),
  top_p: topPSchema,
  stream: z.boolean().nullish(),
  tools: z
    .array(
      z.object({
        type: z.literal("function"),
        name: z.string().min(1),
        parameters: z.record(z.string(), z.unknown()).nullish(),
      }),
    )
    .nullish(),
  tool_choice: z
    .union([
      z.enum(["auto", "none", "required"]),
      z.object({ type: z.literal("function"), name: z.string().min(1) }),
    ])
    .nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  text: z.object({ format: responsesFormatSchema.nullish() }).nullish(),
});

const messagesTextBlockSchema = z.object({ type: z.literal("text"), text: z.string() });

const messagesImageBlockSchema = z.object({
  type: z.literal("image"),
  source: z.discriminatedUnion("type", [
    z.object({
      type: z.literal("base64"),
      media_type: z.enum(["image/jpeg", "image/png", "image/gif", "image/webp"]),
      data: z.string().min(1),
    }),
    z.object({ type: z.literal("url"), url: z.url() }),
  ]),
});

const messagesContentBlockSchema = z.discriminatedUnion("type", [
  messagesTextBlockSchema,
  messagesImageBlockSchema,
  z.object({
    type: z.literal("tool_use"),
    id: messagesToolUseIdSchema,
    name: z.string().min(1),
    // The arguments object itself: JSON text or an array here is refused, as upstream refuses it.
    input: z.record(z.string(), z.unknown()),
  }),
  z.object({
    type: z.literal("tool_result"),
    tool_use_id: messagesToolUseIdSchema,
    content: z
      .union([
        z.string(),
        z.array(z.discriminatedUnion("type", [messagesTextBlockSchema, messagesImageBlockSchema])),
      ])
      .optional(),
    is_error: z.boolean().optional(),
  }),
  z.object({ type: z.literal("thinking"), thinking: z.string(), signature: z.string() }),
  z.object({ type: z.literal("redacted_thinking"), data: z.string() }),
]);
export type MessagesContentBlock = z.output<typeof messagesContentBlockSchema>;

const messagesToolSchema = z.object({
  name: z.string().regex(/^[a-zA-Z0-9_-]{1,128}$/),
  description: z.string().optional(),
  input_schema: z.looseObject({ type: z.literal("object") }),
  strict: z.boolean().optional(),
});

const disableParallelSchema = z.boolean().optional();

const messagesToolChoiceSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("auto"), disable_parallel_tool_use: disableParallelSchema }),
  z.object({ type: z.literal("any"), disable_parallel_tool_use: disableParallelSchema }),
  z.object({
    type: z.literal("tool"),
    name: z.string().min(1),
    disable_parallel_tool_use: disableParallelSchema,
  }),
  z.object({ type: z.literal("none") }),
]);

const messagesThinkingSchema = z.discriminatedUnion("type", [
  z.object({ type: z.literal("enabled"), budget_tokens: z.number().int().min(1024) }),
  z.object({ type: z.literal("adaptive"), display: z.enum(["summarized", "omitted"]).nullish() }),
  z.object({ type: z.literal("disabled") }),
]);

export const messagesRequestSchema = z
  .object({
    model: z.string().min(1),
    // Required by the protocol: the simulator rejects its absence exactly as the real upstream does.
    max_tokens: tokenLimitSchema,
    // The messages protocol samples in 0 to 1, half the other protocols' range.
    temperature: temperatureUpTo(1),
    top_p: topPSchema,
    system: z.union([z.string(), z.array(messagesTextBlockSchema)]).nullish(),
    messages: z
      .array(
        z.object({
          role: z.enum(["user", "assistant"]),
          content: z.union([z.string(), z.array(messagesContentBlockSchema).min(1)]),
        }),
      )
      .min(1),
    stream: z.boolean().nullish(),
    stop_sequences: z
      .array(z.string().regex(/\S/, "each stop sequence must contain non-whitespace"))
      .optional(),
    metadata: z.object({ user_id: z.string().max(256).nullish() }).optional(),
    tools: z.array(messagesToolSchema).optional(),
    tool_choice: messagesToolChoiceSchema.optional(),
    thinking: messagesThinkingSchema.optional(),
    output_config: z
      .object({
        effort: z.enum(["low", "medium", "high", "xhigh", "max"]).nullish(),
        format: z
          .object({ type: z.literal("json_schema"), schema: z.record(z.string(), z.unknown()) })
          .nullish(),
      })
      .optional(),
  })
  .superRefine((request, context) => {
    const thinking = request.thinking?.type;
    if (request.thinking?.type === "enabled" && request.thinking.budget_tokens >= request.max_tokens)
      context.addIssue({
        code: "custom",
        path: ["max_tokens"],
        message: "`max_tokens` must be greater than `thinking.budget_tokens`",
      });
    const forced = request.tool_choice?.type === "any" || request.tool_choice?.type === "tool";
    if ((thinking === "enabled" || thinking === "adaptive") && forced)
      context.addIssue({
        code: "custom",
        path: ["tool_choice"],
        message: "Thinking may not be enabled when tool_choice forces tool use.",
      });
    if (request.tool_choice?.type === "tool") {
      const name = request.tool_choice.name;
      if (!(request.tools ?? []).some((tool) => tool.name === name))
        context.addIssue({
          code: "custom",
          path: ["tool_choice", "name"],
          message: `Tool '${name}' not found in provided tools`,
        });
    }
  });

const jsonObjectSchema = z.record(z.string(), z.unknown());

/** One part: exactly one kind of data, as the protocol's `data` oneof requires. */
const generateContentPartSchema = z
  .object({
    text: z.string().optional(),
    thought: z.boolean().optional(),
    thoughtSignature: z.string().optional(),
    inlineData: z.object({ mimeType: z.string().min(1), data: z.base64() }).optional(),
    fileData: z.object({ fileUri: z.string().min(1), mimeType: z.string().min(1) }).optional(),
    functionCall: z
      .object({ id: z.string().optional(), name: z.string().min(1), args: jsonObjectSchema.optional() })
      .optional(),
    functionResponse: z
      .object({ id: z.string().optional(), name: z.string().min(1), response: jsonObjectSchema })
      .optional(),
  })
  .refine(
    (part) =>
      [part.text, part.inlineData, part.fileData, part.functionCall, part.functionResponse].filter(
        (data) => data !== undefined,
      ).length === 1,
    { message: "a part must hold exactly one of text, inlineData, fileData, functionCall, functionResponse" },
  );
export type GenerateContentPart = z.output<typeof generateContentPartSchema>;

const generateContentSchema = z.object({
  role: z.enum(["user", "model"]).optional(),
  parts: z.array(generateContentPartSchema),
});

const functionDeclarationSchema = z
  .object({
    name: z.string().regex(/^[A-Za-z_][A-Za-z0-9_.:-]{0,127}$/),
    description: z.string().optional(),
    parameters: jsonObjectSchema.optional(),
    parametersJsonSchema: jsonObjectSchema.optional(),
  })
  .refine((declaration) => !(declaration.parameters && declaration.parametersJsonSchema), {
    message: "parameters and parametersJsonSchema are mutually exclusive",
  });

const functionCallingModeSchema = z.enum(["MODE_UNSPECIFIED", "AUTO", "ANY", "NONE", "VALIDATED"]);

// Unknown fields are refused, as the upstream refuses them ("Unknown name …"), so a misspelt field fails here.
const generationConfigSchema = z
  .object({
    temperature: z.number().min(0).max(2).optional(),
    topP: z.number().min(0).max(1).optional(),
    topK: z.number().int().positive().optional(),
    candidateCount: z.number().int().positive().optional(),
    maxOutputTokens: tokenLimitSchema.optional(),
    stopSequences: z.array(z.string()).max(5).optional(),
    seed: z.number().int().optional(),
    presencePenalty: z.number().optional(),
    frequencyPenalty: z.number().optional(),
    responseMimeType: z.enum(["text/plain", "application/json", "text/x.enum"]).optional(),
    responseSchema: jsonObjectSchema.optional(),
    responseJsonSchema: jsonObjectSchema.optional(),
    thinkingConfig: z
      .object({
        includeThoughts: z.boolean().optional(),
        thinkingBudget: z.number().int().optional(),
        thinkingLevel: z.enum(["MINIMAL", "LOW", "MEDIUM", "HIGH"]).optional(),
      })
      .strict()
      .refine((config) => config.thinkingBudget === undefined || config.thinkingLevel === undefined, {
        message: "thinkingBudget and thinkingLevel cannot both be set",
      })
      .optional(),
  })
  .strict()
  .refine((config) => !(config.responseSchema && config.responseJsonSchema), {
    message: "responseSchema and responseJsonSchema are mutually exclusive",
  })
  .refine(
    (config) =>
      (config.responseSchema === undefined && config.responseJsonSchema === undefined) ||
      config.responseMimeType === "application/json",
    { message: "a response schema needs responseMimeType application/json" },
  );

export const generateContentRequestSchema = z
  .object({
    contents: z.array(generateContentSchema).min(1),
    systemInstruction: generateContentSchema.optional(),
    tools: z.array(z.object({ functionDeclarations: z.array(functionDeclarationSchema).min(1) })).optional(),
    toolConfig: z
      .object({
        functionCallingConfig: z
          .object({
            mode: functionCallingModeSchema.optional(),
            allowedFunctionNames: z.array(z.string().min(1)).min(1).optional(),
          })
          .strict(),
      })
      .strict()
      .optional(),
    generationConfig: generationConfigSchema.optional(),
    // Accepted and without effect on the simulated answer.
    safetySettings: z.array(z.unknown()).optional(),
    cachedContent: z.string().optional(),
  })
  .strict();
export type GenerateContentRequest = z.output<typeof generateContentRequestSchema>;

/** The first issue, as upstreams word it: where and what. */
export function describeIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return "invalid request body";
  return issue.path.length > 0 ? `${issue.path.join(".")}: ${issue.message}` : issue.message;
}
