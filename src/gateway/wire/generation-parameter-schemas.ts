import { z } from "zod";

/**
 * The fields both client formats share, with messages that complete the sentence `<field>: …`
 * (validationErrorOf prefixes the field's path). Optional fields accept `null` as "not given"
 * (see parsedGenerationRequestOf).
 */

export const temperatureMinimum = 0;
export const temperatureMaximum = 2;
export const topPMinimum = 0;
export const topPMaximum = 1;

/**
 * The only bound on a token limit: it must survive the trip upstream as an exact JSON number. Anything an
 * upstream finds too large it rejects itself (400/300), with its own, model-specific, message.
 */
export const outputTokensMaximum = Number.MAX_SAFE_INTEGER;

export const modelSchema = z
  .string({ error: (issue) => (issue.input === undefined ? "is required" : "must be a string") })
  .min(1, { error: "must not be empty" });

export const streamSchema = z.boolean({ error: "must be a boolean" }).nullish();

export const temperatureSchema = rangeSchema(temperatureMinimum, temperatureMaximum);
export const topPSchema = rangeSchema(topPMinimum, topPMaximum);

export const outputTokensSchema = z
  .number({ error: "must be a positive integer" })
  .int({
    error: (issue) =>
      issue.code === "too_big" ? `must be at most ${outputTokensMaximum}` : "must be a positive integer",
  })
  .positive({ error: "must be a positive integer" })
  .nullish();

function rangeSchema(minimum: number, maximum: number) {
  const message = `must be a number from ${minimum} to ${maximum} inclusive`;
  return z
    .number({ error: message })
    .min(minimum, { error: message })
    .max(maximum, { error: message })
    .nullish();
}
