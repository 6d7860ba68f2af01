import { randomBytes } from "node:crypto";

/**
 * Tool call ids that carry the model's thought signature. Thinking models of this protocol sign the first
 * function call of each step and refuse (400) a replayed call that lost its signature; clients of the chat
 * and responses formats keep nothing but a call's id, name and arguments. So the signature travels inside the
 * id the client echoes back (as LiteLLM does), and a call that comes back without one gets the protocol's
 * documented sentinel that skips the check, e.g. history written by another model.
 */

const signatureSeparator = "__thought__";
/** Documented by the protocol for calls that have no real signature (thought-signatures guide). */
export const skipThoughtSignatureValidator = "skip_thought_signature_validator";

/** The id of a call in a reply: the upstream's own id when it sent one, else one unique to this call. */
export function toolCallIdOf(
  upstreamId: string | null | undefined,
  thoughtSignature: string | null | undefined,
) {
  const base = upstreamId || `call_${randomBytes(12).toString("hex")}`;
  return thoughtSignature ? `${base}${signatureSeparator}${thoughtSignature}` : base;
}

/** The thought signature a client echoed back inside a call's id, if any. */
export function thoughtSignatureOf(toolCallId: string): string | undefined {
  const start = toolCallId.indexOf(signatureSeparator);
  if (start === -1) return undefined;
  const signature = toolCallId.slice(start + signatureSeparator.length);
  return signature === "" ? undefined : signature;
}
