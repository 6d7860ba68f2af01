import { describe, expect, it } from "vitest";
import { retryAfterMsOf } from "../../src/providers/http/retry-after";

/** How long an upstream asks to be left alone (C13: honoured, never sooner). */
describe("Retry-After", () => {
  const nowMs = Date.parse("2026-11-26T12:00:00Z");

  it("reads delay-seconds, an HTTP date and retry-after-ms (which wins)", () => {
    expect(retryAfterMsOf({ "retry-after": "30" }, nowMs)).toBe(30_000);
    expect(retryAfterMsOf({ "retry-after": "1.5" }, nowMs)).toBe(1_500);
    expect(retryAfterMsOf({ "retry-after": "Thu, 26 Nov 2026 12:00:07 GMT" }, nowMs)).toBe(7_000);
    expect(retryAfterMsOf({ "retry-after": "30", "retry-after-ms": "250" }, nowMs)).toBe(250);
  });

  it("given a Retry-After in either obsolete HTTP date form, when it is read, then it is the same wait as the preferred form, whatever the local time zone", () => {
    const zone = process.env.TZ;
    process.env.TZ = "Asia/Seoul";
    try {
      expect(retryAfterMsOf({ "retry-after": "Thursday, 26-Nov-26 12:00:07 GMT" }, nowMs)).toBe(7_000);
      expect(retryAfterMsOf({ "retry-after": "Thu Nov 26 12:00:07 2026" }, nowMs)).toBe(7_000);
      expect(
        retryAfterMsOf({ "retry-after": "Thu Nov  6 12:00:07 2026" }, Date.parse("2026-11-06T12:00:00Z")),
      ).toBe(7_000);
    } finally {
      if (zone === undefined) delete process.env.TZ;
      else process.env.TZ = zone;
    }
  });

  it("reads a date in the past as no wait, and caps a very long one at an hour", () => {
    expect(retryAfterMsOf({ "retry-after": "Thu, 26 Nov 2026 11:00:00 GMT" }, nowMs)).toBe(0);
    expect(retryAfterMsOf({ "retry-after": "86400" }, nowMs)).toBe(3_600_000);
  });

  it("ignores what it cannot read: the gateway's own backoff applies", () => {
    expect(retryAfterMsOf({}, nowMs)).toBeUndefined();
    expect(retryAfterMsOf({ "retry-after": "soon" }, nowMs)).toBeUndefined();
    expect(retryAfterMsOf({ "retry-after": "-5" }, nowMs)).toBeUndefined();
  });
});
