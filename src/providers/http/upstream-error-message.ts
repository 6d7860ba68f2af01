import { z } from "zod";
import { redactedText, withoutCredentials } from "../../kernel/credential-text";
import { upstreamLimits } from "../../kernel/limits";

/**
 * Every protocol puts the human-readable text at `error.message`: chat-completions and responses
 * `{ error: { message, type, code } }`, messages `{ type: "error", error: { type, message } }`,
 * generateContent `{ error: { code, message, status } }` (sometimes wrapped in a one-element array).
 */
const errorBodySchema = z.union([
  z.object({ error: z.object({ message: z.string() }) }),
  z.object({ message: z.string() }),
  z.object({ error: z.string() }),
]);

/** The upstream's own explanation from an error body, or undefined when the body has none we trust. */
export function extractUpstreamErrorMessage(bodyText: string): string | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(bodyText);
  } catch {
    // Not JSON (often an HTML page from a proxy): showing it would leak infrastructure details.
    return undefined;
  }
  const candidate = Array.isArray(parsed) ? parsed[0] : parsed;
  return messageOf(candidate);
}

/**
 * Whether a parsed stream payload is an error rather than data: chat-completions and generateContent
 * upstreams report a failure after the stream started as a payload with an `error` member.
 */
export function hasErrorMember(payload: unknown): boolean {
  return typeof payload === "object" && payload !== null && "error" in payload && payload.error != null;
}

/** The message of an already-parsed error object (a stream's error event). */
export function messageOf(errorBody: unknown): string | undefined {
  const result = errorBodySchema.safeParse(errorBody);
  if (!result.success) return undefined;
  const body = result.data;
  if ("message" in body) return body.message;
  return typeof body.error === "string" ? body.error : body.error.message;
}

/**
 * Credential shapes that upstreams echo back in messages, e.g. "Incorrect API key provided: sk-…"; our own
 * (a `svc_` key a client pasted into a prompt an upstream quotes) are `withoutCredentials`'s.
 */
const upstreamCredentialPatterns: readonly RegExp[] = [
  /\b(?:sk|pk|rk)-[\w*.-]{6,}/gi,
  /\bAIza[\w-]{10,}/g,
  /\bBearer\s+\S+/gi,
  // Any long run, opaque or not: an upstream's message has no need of one.
  /[\w-]{40,}/g,
];

/**
 * Where a stack trace starts, in the languages upstream servers are written in: Python's header and frames,
 * JavaScript's (`at fn (file.js:1:2)`), Java's (`at a.b.C.m(C.java:12)`) and Go's goroutine dump.
 */
const stackTraceStart =
  /Traceback \(most recent call last\)|File "[^"]*", line \d+|\bat \S+ \(\S+:\d+:\d+\)|\bat [\w$.<>]+\([\w$.]+\.(?:java|kt|scala):\d+\)|goroutine \d+ \[/;

/**
 * Makes an upstream message safe to show our client: a stack trace and what follows it are cut off (C3),
 * our own secrets (the upstream API key) and anything shaped like a credential are redacted, control
 * characters and runs of whitespace collapse to one space, and the text is cut to
 * `upstreamLimits.messageCharactersMax`.
 */
export function sanitiseUpstreamMessage(message: string, secrets: readonly string[]): string {
  const traceAt = message.search(stackTraceStart);
  let text = redactSecrets(traceAt === -1 ? message : message.slice(0, traceAt), secrets);
  for (const pattern of upstreamCredentialPatterns) text = text.replace(pattern, redactedText);
  text = withoutCredentials(text);
  text = text
    .replace(/[\p{Cc}\p{Cf}]+/gu, " ")
    .replace(/\s+/g, " ")
    .trim();
  if (text.length <= upstreamLimits.messageCharactersMax) return text;
  return `${text.slice(0, upstreamLimits.messageCharactersMax - 1)}…`;
}

/** `text` with each of `secrets` (our own credentials) replaced wherever it occurs. */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let hidden = text;
  for (const secret of secrets) {
    if (secret.length > 0 && hidden.includes(secret)) hidden = hidden.split(secret).join(redactedText);
  }
  return hidden;
}
