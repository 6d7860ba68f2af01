import { randomBytes } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { assert } from "../../kernel/assert";

/**
 * Standard Webhooks signing (C14), by its reference library rather than our own HMAC: the receivers verify
 * with the same library (or its ports), so the two cannot drift on encoding details (`whsec_` + base64 secret,
 * `v1,` + base64 HMAC-SHA256 of `id.timestamp.body`, seconds since the epoch).
 */

const secretBytes = 32;

/** A new endpoint's secret: `whsec_` + base64 of 32 random bytes. */
export function newWebhookSecret(): string {
  return `whsec_${randomBytes(secretBytes).toString("base64")}`;
}

/** An endpoint's secrets as stored: the one in force, and the one a rotation replaced, if any. */
export interface EndpointSecrets {
  secret: string;
  previousSecret: { secret: string; validUntil: Date } | null;
}

/**
 * The secrets an attempt at `at` is signed with: the one in force first, then the one it replaced while that
 * is still valid, so a receiver that has not yet moved to the new secret still verifies.
 */
export function signingSecretsAt(secrets: EndpointSecrets, at: Date): string[] {
  const previous = secrets.previousSecret;
  if (previous === null || at.getTime() >= previous.validUntil.getTime()) return [secrets.secret];
  return [secrets.secret, previous.secret];
}

export interface SignedHeaders {
  "webhook-id": string;
  "webhook-timestamp": string;
  "webhook-signature": string;
}

/**
 * The three headers of one attempt at sending `body` as message `messageId`, signed at `at` under each of
 * `secrets` in turn: Standard Webhooks' space-separated signatures, any one of which verifies the message.
 */
export function signedHeaders(
  secrets: readonly string[],
  messageId: string,
  at: Date,
  body: string,
): SignedHeaders {
  assert(secrets.length >= 1 && secrets.length <= 2, "an attempt is signed with one or two secrets");
  return {
    "webhook-id": messageId,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1_000)),
    "webhook-signature": secrets.map((secret) => new Webhook(secret).sign(messageId, at, body)).join(" "),
  };
}
