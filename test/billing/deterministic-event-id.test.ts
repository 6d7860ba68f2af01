import { describe, expect, it } from "vitest";
import {
  fxRateUpdatedEventId,
  usageChargedEventId,
  uuidVersion5,
} from "../../src/billing/commands/deterministic-event-id";

/** Derived event ids: real UUID v5 (so both stores accept them), stable, and distinct per fact. */
describe("deterministic event ids", () => {
  it("computes UUID v5 as RFC 9562 does", () => {
    // The DNS namespace and www.example.com, the example every UUID v5 implementation checks against.
    expect(uuidVersion5("6ba7b810-9dad-11d1-80b4-00c04fd430c8", "www.example.com")).toBe(
      "2ed6657d-e927-568b-95e1-2665a8aea6a2",
    );
  });

  it("gives one id per request charge and per (day, source) rate, and different ids to different facts", () => {
    expect(usageChargedEventId("req_1")).toBe(usageChargedEventId("req_1"));
    expect(usageChargedEventId("req_1")).not.toBe(usageChargedEventId("req_2"));
    expect(fxRateUpdatedEventId("2026-11-20", "koreaexim")).not.toBe(
      fxRateUpdatedEventId("2026-11-20", "default"),
    );
    expect(usageChargedEventId("req_1")).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
  });
});
