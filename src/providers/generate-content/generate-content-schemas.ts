import { z } from "zod";

/**
 * Partial schemas of the generateContent protocol: only the fields the gateway reads. The protocol leaves
 * out fields whose value is zero or empty, so nearly everything is optional.
 */

const tokenCountSchema = z.number().int().nonnegative();

export const usageMetadataSchema = z.object({
  /** Includes cached content. */
  promptTokenCount: tokenCountSchema.nullish(),
  cachedContentTokenCount: tokenCountSchema.nullish(),
  /** Visible output only: thinking is counted apart, in thoughtsTokenCount. */
  candidatesTokenCount: tokenCountSchema.nullish(),
  thoughtsTokenCount: tokenCountSchema.nullish(),
});
export type UsageMetadata = z.output<typeof usageMetadataSchema>;

export const generateContentResponseSchema = z.object({
  candidates: z
    .array(
      z.object({
        content: z
          .object({
            parts: z
              .array(
                z.object({
                  text: z.string().nullish(),
                  thought: z.boolean().nullish(),
                  functionCall: z
                    .object({
                      /** Sent by some models only; the gateway makes one otherwise. */
                      id: z.string().nullish(),
                      name: z.string().min(1),
                      /** Absent for a function without parameters. */
                      args: z.record(z.string(), z.unknown()).nullish(),
                    })
                    .nullish(),
                  /** On the first function call of a step, for the replay of that call. */
                  thoughtSignature: z.string().nullish(),
                }),
              )
              .nullish(),
          })
          .nullish(),
        finishReason: z.string().nullish(),
      }),
    )
    .nullish(),
  /** Set instead of candidates when the prompt itself was blocked. */
  promptFeedback: z.object({ blockReason: z.string().nullish() }).nullish(),
  usageMetadata: usageMetadataSchema.nullish(),
});
export type GenerateContentResponse = z.output<typeof generateContentResponseSchema>;
