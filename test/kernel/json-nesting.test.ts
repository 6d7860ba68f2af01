import { describe, expect, it } from "vitest";
import { nestsDeeperThan } from "../../src/kernel/json-nesting";

/** The nesting bound of free-form request JSON, measured without recursion. */

function nestedArrays(depth: number): unknown {
  let value: unknown = [];
  for (let level = 1; level < depth; level += 1) value = [value];
  return value;
}

describe("nestsDeeperThan", () => {
  it("counts containers, the outermost included, and scalars not at all", () => {
    expect(nestsDeeperThan("text", 0)).toBe(false);
    expect(nestsDeeperThan({}, 1)).toBe(false);
    expect(nestsDeeperThan({}, 0)).toBe(true);
    expect(nestsDeeperThan({ a: [1, { b: "x" }] }, 3)).toBe(false);
    expect(nestsDeeperThan({ a: [1, { b: "x" }] }, 2)).toBe(true);
    expect(nestsDeeperThan({ wide: Array.from({ length: 10_000 }, () => ({})) }, 3)).toBe(false);
  });

  it("given a million levels, then answers without overflowing the stack", () => {
    const deep = nestedArrays(1_000_000);
    expect(nestsDeeperThan(deep, 64)).toBe(true);
    expect(nestsDeeperThan(nestedArrays(64), 64)).toBe(false);
    expect(nestsDeeperThan(nestedArrays(65), 64)).toBe(true);
  });
});
