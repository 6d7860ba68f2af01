import { z } from "zod";

/** Partial schemas of the responses protocol: only the fields the gateway reads. */

const tokenCountSchema = z.number().int().nonnegative();

export const responsesUsageSchema = z.object({
  /** Includes cached input tokens. */
  input_tokens: tokenCountSchema.nullish(),
  input_tokens_details: z.object({ cached_tokens: tokenCountSchema.nullish() }).nullish(),
  /** Includes reasoning tokens. */
  output_tokens: tokenCountSchema.nullish(),
  output_tokens_details: z.object({ reasoning_tokens: tokenCountSchema.nullish() }).nullish(),
});
export type ResponsesUsage = z.output<typeof responsesUsageSchema>;

const responseErrorSchema = z.object({ message: z.string().nullish() });

/** What decides the finish and the bill: present both in a JSON reply and in the terminal stream events. */
const responseOutcomeFields = {
  status: z.string().nullish(),
  incomplete_details: z.object({ reason: z.string().nullish() }).nullish(),
  error: responseErrorSchema.nullish(),
  usage: responsesUsageSchema.nullish(),
};

/** A message item's text parts, or a function call (`call_id` names it in the next request's output). */
const outputItemSchema = z.object({
  type: z.string(),
  content: z
    .array(z.object({ type: z.string(), text: z.string().nullish(), refusal: z.string().nullish() }))
    .nullish(),
  call_id: z.string().nullish(),
  name: z.string().nullish(),
  arguments: z.string().nullish(),
});
export type OutputItem = z.output<typeof outputItemSchema>;

/** A function call item, once its type says it is one: every field the gateway passes on is required. */
export const functionCallItemSchema = z.object({
  type: z.literal("function_call"),
  call_id: z.string().min(1),
  name: z.string().min(1),
  arguments: z.string(),
});

export const responseSchema = z.object({
  ...responseOutcomeFields,
  output: z.array(outputItemSchema),
});
export type Response = z.output<typeof responseSchema>;

export const responsesStreamEventSchema = z.object({ type: z.string() });

export const outputTextDeltaEventSchema = z.object({ delta: z.string() });

/** `response.output_item.added` / `.done`: the item at its position in the output. */
export const outputItemEventSchema = z.object({
  output_index: z.number().int().nonnegative(),
  item: outputItemSchema,
});

export const functionCallArgumentsDeltaEventSchema = z.object({
  output_index: z.number().int().nonnegative(),
  delta: z.string(),
});

export const functionCallArgumentsDoneEventSchema = z.object({
  output_index: z.number().int().nonnegative(),
  arguments: z.string(),
});

/** `response.completed`, `response.incomplete` and `response.failed` carry the final response. */
export const responseTerminalEventSchema = z.object({ response: z.object(responseOutcomeFields) });
export type ResponseOutcome = z.output<typeof responseTerminalEventSchema>["response"];

/** The `error` event: `{ type: "error", code, message, param }`. */
export const responsesErrorEventSchema = z.object({ message: z.string().nullish() });
