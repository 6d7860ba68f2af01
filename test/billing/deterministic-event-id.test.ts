import { describe, expect, it } from "vitest";
import {
  creditToppedUpEventId,
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

  it("given a top-up's account and key, then the id is the one earlier releases derived, and no other account and key share it", () => {
    // A retry sent across an upgrade must find the top-up it retries.
    expect(creditToppedUpEventId("account-user-alice", "topup-7f3a")).toBe(
      uuidVersion5("8f0e3c52-6a1d-4c4b-9e57-2d7b1f6a9c31", "CreditToppedUp/account-user-alice/topup-7f3a"),
    );
    expect(creditToppedUpEventId("account-user-alice", "x/y")).not.toBe(
      creditToppedUpEventId("account-user-alice/x", "y"),
    );
  });
});
