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
    id: z.string().min(1),
    name: z.string().min(1),
    // The arguments object itself: JSON text or an array here is refused, as upstream refuses it.
    input: z.record(z.string(), z.unknown()),
  }),
  z.object({
    type: z.literal("tool_result"),
    tool_use_id: z.string().min(1),
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
