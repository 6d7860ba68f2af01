import type { z } from "zod";
import { UpstreamFailedError } from "../provider";

/** Parses JSON text from the upstream; anything that is not JSON is a malformed reply. */
export function parseUpstreamJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new UpstreamFailedError("malformed", "upstream sent a reply that is not JSON");
  }
}

/**
 * Checks a parsed reply against the partial schema of the fields we use. The message names the first
 * offending field (field names only, never values), which is enough to diagnose a protocol change.
 */
export function parseUpstreamReply<Schema extends z.ZodType>(
  schema: Schema,
  value: unknown,
): z.output<Schema> {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  const where = issue && issue.path.length > 0 ? ` at ${issue.path.join(".")}` : "";
  throw new UpstreamFailedError("malformed", `upstream reply does not follow the protocol${where}`);
}
