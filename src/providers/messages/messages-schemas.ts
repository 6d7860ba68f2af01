import { z } from "zod";

/** Partial schemas of the messages protocol: only the fields the gateway reads. */

const tokenCountSchema = z.number().int().nonnegative();

export const messagesUsageSchema = z.object({
  /** Uncached input only: cache reads and cache writes are counted apart. */
  input_tokens: tokenCountSchema.nullish(),
  cache_read_input_tokens: tokenCountSchema.nullish(),
  cache_creation_input_tokens: tokenCountSchema.nullish(),
  /** Includes thinking. Cumulative in a stream: the last value is the total. */
  output_tokens: tokenCountSchema.nullish(),
  output_tokens_details: z.object({ thinking_tokens: tokenCountSchema.nullish() }).nullish(),
});
export type MessagesUsage = z.output<typeof messagesUsageSchema>;

export const messageSchema = z.object({
  content: z.array(z.object({ type: z.string(), text: z.string().nullish() })),
  stop_reason: z.string().nullish(),
  usage: messagesUsageSchema.nullish(),
});

export const messagesStreamEventSchema = z.object({ type: z.string() });

export const messageStartEventSchema = z.object({
  message: z.object({ usage: messagesUsageSchema.nullish() }),
});

export const contentBlockDeltaEventSchema = z.object({
  delta: z.object({ type: z.string(), text: z.string().nullish() }),
});

export const messageDeltaEventSchema = z.object({
  delta: z.object({ stop_reason: z.string().nullish() }),
  usage: messagesUsageSchema.nullish(),
});
