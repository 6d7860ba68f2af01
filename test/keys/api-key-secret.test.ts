import { createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import { ApiKeyHasher, generateApiKeyValue, looksLikeApiKey, previewOf } from "../../src/keys/api-key-secret";

/**
 * A key's value is kept only as its HMAC-SHA256 under the pepper, compared whole: the admission lookup finds
 * a row by the hash, and the comparison after it is the last word on whether the key is that row's.
 */

const pepper = "pepper-of-the-secret-test";
const value = "svc_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789-_abcde";

describe("API key values and their hashes", () => {
  it("given a value, then its hash is its HMAC-SHA256 under the pepper, and another pepper's differs", () => {
    const hasher = new ApiKeyHasher(pepper);
    expect(hasher.hash(value)).toBe(createHmac("sha256", pepper).update(value).digest("hex"));
    expect(new ApiKeyHasher(`${pepper}x`).hash(value)).not.toBe(hasher.hash(value));
  });

  it("given two hashes that differ only in their last byte or only in their first, then they do not match", () => {
    const hasher = new ApiKeyHasher(pepper);
    const hash = hasher.hash(value);
    const lastFlipped = `${hash.slice(0, -2)}${hash.endsWith("00") ? "01" : "00"}`;
    const firstFlipped = `${hash.startsWith("00") ? "01" : "00"}${hash.slice(2)}`;
    expect(hasher.matches(hash, hash)).toBe(true);
    expect(hasher.matches(hash, lastFlipped)).toBe(false);
    expect(hasher.matches(hash, firstFlipped)).toBe(false);
    expect(hasher.matches(hash, hash.slice(0, 32))).toBe(false);
  });

  it("given a new value, then it is svc_ and 43 base64url characters, and its preview shows 4 and 4 of them", () => {
    const generated = generateApiKeyValue();
    expect(looksLikeApiKey(generated)).toBe(true);
    expect(previewOf(generated)).toBe(`svc_${generated.slice(4, 8)}…${generated.slice(-4)}`);
    expect(looksLikeApiKey(generated.slice(0, -1))).toBe(false);
    expect(looksLikeApiKey(`${generated}a`)).toBe(false);
  });
});
