import { z } from "zod";

/**
 * Partial schemas of the chat-completions replies: only the fields the gateway reads. Unknown fields are
 * dropped, so an upstream that adds fields keeps working; a field we read with the wrong type is malformed.
 */

const tokenCountSchema = z.number().int().nonnegative();

export const chatCompletionsUsageSchema = z.object({
  /** Includes cached prompt tokens. */
  prompt_tokens: tokenCountSchema.nullish(),
  /** Includes reasoning tokens. */
  completion_tokens: tokenCountSchema.nullish(),
  prompt_tokens_details: z.object({ cached_tokens: tokenCountSchema.nullish() }).nullish(),
  completion_tokens_details: z.object({ reasoning_tokens: tokenCountSchema.nullish() }).nullish(),
});
export type ChatCompletionsUsage = z.output<typeof chatCompletionsUsageSchema>;

/** Only function calls exist in a reply to a request that offered only function tools. */
const toolCallSchema = z.object({
  id: z.string().min(1),
  function: z.object({ name: z.string().min(1), arguments: z.string() }),
});

export const chatCompletionSchema = z.object({
  choices: z
    .array(
      z.object({
        message: z.object({
          content: z.string().nullish(),
          refusal: z.string().nullish(),
          tool_calls: z.array(toolCallSchema).nullish(),
        }),
        finish_reason: z.string().nullish(),
      }),
    )
    .min(1),
  usage: chatCompletionsUsageSchema.nullish(),
});

/** A streamed piece of a call: its first carries id and name, the rest only pieces of the arguments. */
const toolCallDeltaSchema = z.object({
  index: z.number().int().nonnegative(),
  id: z.string().min(1).nullish(),
  function: z.object({ name: z.string().min(1).nullish(), arguments: z.string().nullish() }).nullish(),
});
export type ChatCompletionsToolCallDelta = z.output<typeof toolCallDeltaSchema>;

export const chatCompletionChunkSchema = z.object({
  choices: z
    .array(
      z.object({
        delta: z
          .object({
            content: z.string().nullish(),
            refusal: z.string().nullish(),
            tool_calls: z.array(toolCallDeltaSchema).nullish(),
          })
          .nullish(),
        finish_reason: z.string().nullish(),
      }),
    )
    .nullish(),
  usage: chatCompletionsUsageSchema.nullish(),
});
