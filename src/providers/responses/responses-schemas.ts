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

export const responseSchema = z.object({
  ...responseOutcomeFields,
  output: z.array(
    z.object({
      type: z.string(),
      content: z.array(z.object({ type: z.string(), text: z.string().nullish() })).nullish(),
    }),
  ),
});
export type Response = z.output<typeof responseSchema>;

export const responsesStreamEventSchema = z.object({ type: z.string() });

export const outputTextDeltaEventSchema = z.object({ delta: z.string() });

/** `response.completed`, `response.incomplete` and `response.failed` carry the final response. */
export const responseTerminalEventSchema = z.object({ response: z.object(responseOutcomeFields) });
export type ResponseOutcome = z.output<typeof responseTerminalEventSchema>["response"];

/** The `error` event: `{ type: "error", code, message, param }`. */
export const responsesErrorEventSchema = z.object({ message: z.string().nullish() });
