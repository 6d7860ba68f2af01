import { countTokens } from "gpt-tokenizer";
import { describe, expect, it } from "vitest";
import { boundedTokenCounter } from "../../src/providers/bounded-token-count";

/** A client's message may be one 1 MB word; counting it must not pin the event loop (the BPE is quadratic). */

const count = boundedTokenCounter(countTokens);

describe("bounded token count", () => {
  it("given ordinary text in any script, then the count is exactly the tokenizer's", () => {
    for (const text of [
      "",
      "Hello, world! How are you today?",
      "한국어 문장도 그대로 셉니다. 😀 emoji and\nnew lines\n\n  indented",
      `${"word ".repeat(2_000)}tail`,
      "https://example.com/a/b?c=d&e=f#g 1234567890 ***",
      `${"a".repeat(63)} ${"!".repeat(63)}${" ".repeat(63)}x`,
    ])
      expect(count(text)).toBe(countTokens(text));
  });

  it.each([
    ["letters", "x"],
    ["Hangul", "한"],
    ["spaces", " "],
    ["punctuation", "!"],
    ["astral letters", "𝒜"],
    ["newlines", "\n"],
  ])(
    "given 1 MB of %s without a break, then it is counted in bounded time, near the tokenizer's count",
    (_label, unit) => {
      const text = unit.repeat(Math.floor(1_000_000 / unit.length));
      const startedMs = performance.now();
      const counted = count(text);
      // Unbounded, 1 MB of one piece takes many minutes; a loaded machine may take a few times the usual 0.1 s.
      expect(performance.now() - startedMs).toBeLessThan(3_000);
      // The tokenizer's own count of a slice, scaled: what the whole would be, give or take a token per slice.
      const slices = text.length / 64;
      const perSlice = countTokens(text.slice(0, 64));
      expect(counted).toBeGreaterThanOrEqual(Math.floor(slices - 1) * perSlice);
      expect(counted).toBeLessThanOrEqual(Math.ceil(slices + 1) * perSlice);
    },
  );

  it("given a long run between ordinary words, then only the run is sliced", () => {
    const run = "z".repeat(10_000);
    const text = `before the run ${run} after the run`;
    expect(count(text)).toBe(countTokens("before the run ") + count(run) + countTokens(" after the run"));
  });
});
