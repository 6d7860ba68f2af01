import { describe, expect, it } from "vitest";
import { counted } from "../../src/kernel/counted";

describe("counted", () => {
  it("names one in the singular and every other count, none included, in the plural", () => {
    expect([0, 1, 2].map((count) => counted(count, "account"))).toEqual([
      "0 accounts",
      "1 account",
      "2 accounts",
    ]);
    expect(counted(1n, "event")).toBe("1 event");
    expect(counted(3n, "broken link")).toBe("3 broken links");
    expect(counted(2, "index", "indexes")).toBe("2 indexes");
  });
});
