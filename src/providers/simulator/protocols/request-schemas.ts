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

/** A responses content part: text of any text type, or an image the real API would fetch or decode. */
const responsesPartSchema = z.union([
  z.object({ type: z.literal("input_image"), image_url: z.string().min(1), detail: z.string().nullish() }),
  z.object({ type: z.string(), text: z.string().nullish() }),
]);

const responsesInputItemSchema = z.union([
  z.object({
    type: z.literal("function_call"),
    call_id: z.string().min(1),
    name: z.string().min(1),
    arguments: z.string(),
  }),
  z.object({
    type: z.literal("function_call_output"),
    call_id: z.string().min(1),
    output: z.union([z.string(), textPartsSchema]),
  }),
  // Messages, with or without `type: "message"`; other items (reasoning) have no role and add no text here.
  z.object({
    type: z.string().optional(),
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

export const messagesRequestSchema = z.object({
  model: z.string().min(1),
  // Required by the protocol: the simulator rejects its absence exactly as the real upstream does.
  max_tokens: tokenLimitSchema,
  system: contentSchema,
  messages: z.array(z.object({ role: z.enum(["user", "assistant"]), content: contentSchema })).min(1),
  stream: z.boolean().nullish(),
});

const generateContentSchema = z.object({ role: z.string().optional(), parts: textPartsSchema });

export const generateContentRequestSchema = z.object({
  contents: z.array(generateContentSchema).min(1),
  systemInstruction: generateContentSchema.nullish(),
  generationConfig: z.object({ maxOutputTokens: tokenLimitSchema.nullish() }).nullish(),
});

/** The first issue, as upstreams word it: where and what. */
export function describeIssue(error: z.ZodError): string {
  const issue = error.issues[0];
  if (!issue) return "invalid request body";
  return issue.path.length > 0 ? `${issue.path.join(".")}: ${issue.message}` : issue.message;
}
