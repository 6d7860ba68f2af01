import { createHash } from "node:crypto";

/**
 * A call's id as one upstream protocol accepts it. An id only pairs a call with its result inside one
 * request, but a conversation may carry ids another protocol minted — a generateContent call's id carries its
 * thought signature, hundreds of base64 characters — or that the client made up, and each protocol refuses
 * ids outside its own rule (400). An id outside the rule is sent as one derived from it: the same id always
 * gets the same replacement, so a call and its result still pair, and two ids get two replacements. An id
 * within the rule is sent as it is.
 */
export interface ToolCallIdRule {
  /** What the protocol's own ids start with, for the ids made here. */
  prefix: string;
  charactersMax?: number;
  pattern?: RegExp;
}

/** 96 bits of the id's SHA-256: no two ids of one conversation meet. */
const derivedHexCharacters = 24;

export function toolCallIdWithin(rule: ToolCallIdRule, id: string): string {
  const withinLength = rule.charactersMax === undefined || id.length <= rule.charactersMax;
  if (withinLength && (rule.pattern === undefined || rule.pattern.test(id))) return id;
  const digest = createHash("sha256").update(id).digest("hex").slice(0, derivedHexCharacters);
  return `${rule.prefix}${digest}`;
}

/** An id as the client sent it, for a message: cut short, since a signed id can run to kilobytes. */
export function quotedToolCallId(id: string): string {
  return JSON.stringify(id.length > 64 ? `${id.slice(0, 64)}…` : id);
}
