import { z } from "zod";

/**
 * The HTTP status a generateContent stream's error chunk stands for, when it is a failure of the upstream's
 * own that C13 retries: the protocol's `error.code` is the HTTP status its JSON reply would have had (503 for
 * an overloaded model). Anything else: undefined, a failure only reported.
 */
const errorChunkSchema = z.object({ error: z.object({ code: z.number().int() }) });

export function mapGenerateContentErrorStatus(payload: unknown): number | undefined {
  const parsed = errorChunkSchema.safeParse(Array.isArray(payload) ? payload[0] : payload);
  if (!parsed.success) return undefined;
  const { code } = parsed.data.error;
  return code >= 500 && code <= 599 ? code : undefined;
}
