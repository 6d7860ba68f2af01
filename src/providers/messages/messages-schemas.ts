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

/** Any content block: the gateway reads text and tool_use blocks and skips the others (thinking, …). */
const contentBlockSchema = z.looseObject({ type: z.string(), text: z.string().nullish() });

/** A client tool call: `input` is the arguments object itself. */
export const toolUseBlockSchema = z.object({
  id: z.string().min(1),
  name: z.string().min(1),
  input: z.record(z.string(), z.unknown()),
});

export const messageSchema = z.object({
  content: z.array(contentBlockSchema),
  stop_reason: z.string().nullish(),
  usage: messagesUsageSchema.nullish(),
});

export const messagesStreamEventSchema = z.object({ type: z.string() });

export const messageStartEventSchema = z.object({
  message: z.object({ usage: messagesUsageSchema.nullish() }),
});

const blockIndexSchema = z.number().int().nonnegative();

export const contentBlockStartEventSchema = z.object({
  index: blockIndexSchema,
  content_block: z.object({ type: z.string() }),
});

/** A tool_use block starts with its id and name and an empty input; the input follows as JSON deltas. */
export const toolUseStartEventSchema = z.object({
  content_block: toolUseBlockSchema.pick({ id: true, name: true }),
});

export const contentBlockDeltaEventSchema = z.object({
  index: blockIndexSchema,
  delta: z.object({ type: z.string(), text: z.string().nullish(), partial_json: z.string().nullish() }),
});

export const contentBlockStopEventSchema = z.object({ index: blockIndexSchema });

export const messageDeltaEventSchema = z.object({
  delta: z.object({ stop_reason: z.string().nullish() }),
  usage: messagesUsageSchema.nullish(),
});
