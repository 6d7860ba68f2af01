import { describe, expect, it } from "vitest";
import { withoutCredentials } from "../../src/kernel/credential-text";

/** What the gateway repeats of a client's text: every credential-shaped run hidden, everything else as sent. */

describe("withoutCredentials", () => {
  it.each([
    ["an API key", "svc_cgcd3YYA_2OYf0bHBZIFXVHDQ7Ziz9TyZP7xy24VdUI"],
    ["an API key cut short", "svc_cgcd3YYA"],
    ["a session token", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.M5v0EPG3GI4FTNAjgg93_zVPPiwL7JBI2hqnnAd3Q90"],
    ["a webhook's signing secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],
    ["a generated admin token", "admin_q5zYQ2s8Jw0bXb6yQm3k1nVh7u9Pq4rT2xLzA8c0fEo"],
    ["a long opaque token", "test-admin-token-0123456789abcdef0123456789ab"],
    ["a hash", "5f4dcc3b5aa765d61d8327deb882cf995f4dcc3b5aa765d61d8327deb882cf99"],
  ])("hides %s, in the middle of a sentence too", (_what, secret) => {
    expect(withoutCredentials(`The model '${secret}' does not exist`)).toBe(
      "The model '[redacted]' does not exist",
    );
  });

  it.each([
    "The model 'alpha-5.4-preview-2026-11-30' does not exist",
    "No such key c15b9de6-a859-4340-906f-b4177d85275b",
    "request req_89bfef2a80da47cabe31ed68e12dc508",
    "stream usage-req_89bfef2a80da47cabe31ed68e12dc508 has no event at version 3",
    "stream webhook-c15b9de6-a859-4340-906f-b4177d85275b was removed",
    "send the header Authorization: Bearer svc_… (an API key)",
    `${"n".repeat(100)}…: is not a parameter of this request`,
  ])("keeps %s as it is", (text) => {
    expect(withoutCredentials(text)).toBe(text);
  });
});
