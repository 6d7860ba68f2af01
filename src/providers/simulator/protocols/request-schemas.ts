import { z } from "zod";

/** What the simulator accepts, per protocol: the fields its answer depends on, validated as upstream would. */

const textPartsSchema = z.array(z.object({ type: z.string().optional(), text: z.string().nullish() }));
const contentSchema = z.union([z.string(), textPartsSchema]).nullish();
const tokenLimitSchema = z.number().int().positive();

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
          id: z.string().min(1),
          type: z.literal("function"),
          function: z.object({ name: z.string().min(1), arguments: z.string() }),
        }),
      )
      .nullish(),
    tool_call_id: z.string().nullish(),
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
