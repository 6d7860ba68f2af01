import { z } from "zod";

/** What the simulator accepts, per protocol: the fields its answer depends on, validated as upstream would. */

const textPartsSchema = z.array(z.object({ type: z.string().optional(), text: z.string().nullish() }));
const contentSchema = z.union([z.string(), textPartsSchema]).nullish();
const tokenLimitSchema = z.number().int().positive();

export const chatCompletionsRequestSchema = z.object({
  model: z.string().min(1),
  messages: z.array(z.object({ role: z.string(), content: contentSchema })).min(1),
  max_completion_tokens: tokenLimitSchema.nullish(),
  max_tokens: tokenLimitSchema.nullish(),
  stream: z.boolean().nullish(),
  stream_options: z.object({ include_usage: z.boolean().nullish() }).nullish(),
});

export const responsesRequestSchema = z.object({
  model: z.string().min(1),
  instructions: z.string().nullish(),
  input: z.union([
    z.string(),
    // Items other than messages (tool outputs, reasoning) have no role and add no text here.
    z.array(z.object({ role: z.string().optional(), content: contentSchema })),
  ]),
  max_output_tokens: tokenLimitSchema.nullish(),
  stream: z.boolean().nullish(),
});

export const messagesRequestSchema = z.object({
  model: z.string().min(1),
  // Required by the protocol: the simulator rejects its absence exactly as the real upstream does.
  max_tokens: tokenLimitSchema,
  system: contentSchema,
  messages: z.array(z.object({ role: z.enum(["user", "assistant"]), content: contentSchema })).min(1),
  stream: z.boolean().nullish(),
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
