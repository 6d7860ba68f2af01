import { z } from "zod";

/**
 * The HTTP status a messages stream's `error` event stands for, when it names a failure of the upstream's own
 * that C13 retries: the protocol sends an overload mid-stream as `overloaded_error`, its 529 in a JSON reply,
 * and a server fault as `api_error`, its 500. Any other type (or none): undefined, a failure only reported.
 */
const serverErrorStatuses: Readonly<Record<string, number>> = {
  overloaded_error: 529,
  api_error: 500,
};

const errorEventSchema = z.object({ error: z.object({ type: z.string() }) });

export function mapMessagesErrorStatus(payload: unknown): number | undefined {
  const parsed = errorEventSchema.safeParse(payload);
  return parsed.success ? serverErrorStatuses[parsed.data.error.type] : undefined;
}
