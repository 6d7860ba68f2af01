import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";

/**
 * API key values: `svc_` + 43 base64url characters (32 random bytes). Only the HMAC-SHA256 of a value
 * under KEY_PEPPER is ever stored; the value itself is shown once, at issuance.
 */

export const apiKeyPrefix = "svc_";
const randomBytesPerKey = 32;
const apiKeyPattern = /^svc_[A-Za-z0-9_-]{43}$/;

export function generateApiKeyValue(): string {
  return `${apiKeyPrefix}${randomBytes(randomBytesPerKey).toString("base64url")}`;
}

export function looksLikeApiKey(value: string): boolean {
  return apiKeyPattern.test(value);
}

export class ApiKeyHasher {
  private readonly pepper: Buffer;

  constructor(pepper: string) {
    this.pepper = Buffer.from(pepper, "utf8");
  }

  hash(value: string): string {
    return createHmac("sha256", this.pepper).update(value, "utf8").digest("hex");
  }

  /** Constant-time comparison of two hex hashes. */
  matches(expectedHash: string, actualHash: string): boolean {
    const expected = Buffer.from(expectedHash, "hex");
    const actual = Buffer.from(actualHash, "hex");
    return expected.length === actual.length && timingSafeEqual(expected, actual);
  }
}

/** `svc_` + the first 4 and last 4 characters of the random part: enough to recognise, useless to attack. */
export function previewOf(value: string): string {
  const secret = value.slice(apiKeyPrefix.length);
  return `${apiKeyPrefix}${secret.slice(0, 4)}…${secret.slice(-4)}`;
}
