import { describe, expect, it } from "vitest";
import { nextReplyMilliseconds } from "../../../src/gateway/generation/reply-clock";

describe("reply clock (C12: ids unique among one process's replies)", () => {
  it("given many replies started in the same millisecond, then every stamp is distinct and none is early", () => {
    const startedAt = Date.now() + 60_000;
    const stamps = Array.from({ length: 500 }, () => nextReplyMilliseconds(startedAt));
    expect(new Set(stamps).size).toBe(500);
    expect(Math.min(...stamps)).toBe(startedAt);
  });

  it("given a start later than every earlier stamp, then the stamp is the start itself", () => {
    const later = Date.now() + 3_600_000;
    expect(nextReplyMilliseconds(later)).toBe(later);
  });
});
