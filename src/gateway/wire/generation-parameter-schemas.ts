import { z } from "zod";
import { chargeLimits } from "../../kernel/limits";
import type { ReasoningEffort } from "../../providers/provider";
import { apiErrors } from "../api-error";

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
 * The only bound on a token limit: the most tokens a request can be priced for (the hold prices the limit
 * before the upstream answers). Anything an upstream finds too large below it, it rejects itself (400/300),
 * with its own, model-specific, message.
 */
export const outputTokensMaximum = chargeLimits.tokensPerRequestMax;

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
  .max(outputTokensMaximum, { error: `must be at most ${outputTokensMaximum}` })
  .nullish();

function rangeSchema(minimum: number, maximum: number) {
  const message = `must be a number from ${minimum} to ${maximum} inclusive`;
  return z
    .number({ error: message })
    .min(minimum, { error: message })
    .max(maximum, { error: message })
    .nullish();
}

export const penaltyMinimum = -2;
export const penaltyMaximum = 2;
export const penaltySchema = rangeSchema(penaltyMinimum, penaltyMaximum);

/** Only exact JSON integers: a seed an upstream would round is not the seed the client asked for. */
export const seedSchema = z
  .number({ error: "must be an integer" })
  .int({ error: "must be an integer from -9007199254740991 to 9007199254740991" })
  .nullish();

const reasoningEfforts = [
  "none",
  "minimal",
  "low",
  "medium",
  "high",
  "xhigh",
] as const satisfies readonly ReasoningEffort[];
export const reasoningEffortSchema = z
  .enum(reasoningEfforts, {
    error: `must be one of ${reasoningEfforts.map((effort) => `"${effort}"`).join(", ")}`,
  })
  .nullish();

/** The tightest bound among the upstreams that carry an end-user id (messages' `metadata.user_id`). */
export const userCharactersMax = 256;
export const userSchema = z
  .string({ error: "must be a string" })
  .max(userCharactersMax, { error: `must be at most ${userCharactersMax} characters` })
  .nullish();

/**
 * The end user's id of either format: `safety_identifier` is the protocols' current name for it and `user`
 * their deprecated one. The same value under both is harmless; two different values have no meaning we
 * could pick without guessing.
 */
export function endUserOf(
  user: string | null | undefined,
  safetyIdentifier: string | null | undefined,
): string | undefined {
  if (user != null && safetyIdentifier != null && user !== safetyIdentifier)
    throw apiErrors.validation("user: conflicts with safety_identifier; send only one of them");
  return safetyIdentifier ?? user ?? undefined;
}

/** The bounds both client formats document for `metadata`. */
export const metadataKeysMax = 16;
export const metadataKeyCharactersMax = 64;
export const metadataValueCharactersMax = 512;
export const metadataSchema = z
  .record(
    z.string(),
    z
      .string({ error: "must be a string" })
      .max(metadataValueCharactersMax, { error: `must be at most ${metadataValueCharactersMax} characters` }),
    { error: "must be an object of string values" },
  )
  .superRefine((metadata, context) => {
    const keys = Object.keys(metadata);
    if (keys.length > metadataKeysMax)
      context.addIssue({ code: "custom", message: `must have at most ${metadataKeysMax} keys` });
    for (const key of keys)
      if (key.length > metadataKeyCharactersMax)
        context.addIssue({
          code: "custom",
          path: [key],
          message: `key must be at most ${metadataKeyCharactersMax} characters`,
        });
  })
  .nullish();

/**
 * `service_tier` of both formats: "auto", the protocols' default, asks for nothing the gateway does not do
 * anyway (each upstream serves at its own tier); any named tier is one it cannot choose upstream (C12).
 */
export const serviceTierSchema = z
  .literal("auto", { error: 'must be "auto" or absent: the gateway chooses no service tier' })
  .nullish();

/** `stream_options.include_obfuscation` of both formats: the gateway pads no stream event, so only false. */
export const includeObfuscationSchema = z
  .boolean({ error: "must be a boolean" })
  .nullish()
  .refine((obfuscation) => obfuscation !== true, {
    error: "must be false or absent: the gateway adds no obfuscation to stream events",
  });
