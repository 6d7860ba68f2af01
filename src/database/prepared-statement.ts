import { createHash } from "node:crypto";
import type { QueryConfig } from "pg";

const namesByText = new Map<string, string>();

/**
 * A statement that each connection parses and plans once, then only binds and executes: for SQL generated
 * at run time (projection tables) and run on every batch. The name is a digest of the text, so two
 * different texts never share a name, and it stays within PostgreSQL's 63-byte identifier limit.
 */
export function preparedStatement(text: string, values: unknown[]): QueryConfig {
  let name = namesByText.get(text);
  if (name === undefined) {
    name = `generated-${createHash("sha256").update(text).digest("hex").slice(0, 32)}`;
    namesByText.set(text, name);
  }
  return { name, text, values };
}
