import { randomBytes } from "node:crypto";
import { Webhook } from "standardwebhooks";

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

export interface SignedHeaders {
  "webhook-id": string;
  "webhook-timestamp": string;
  "webhook-signature": string;
}

/** The three headers of one attempt at sending `body` as message `messageId`, signed at `at`. */
export function signedHeaders(secret: string, messageId: string, at: Date, body: string): SignedHeaders {
  return {
    "webhook-id": messageId,
    "webhook-timestamp": String(Math.floor(at.getTime() / 1_000)),
    "webhook-signature": new Webhook(secret).sign(messageId, at, body),
  };
}
