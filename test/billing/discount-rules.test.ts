import { describe, expect, it } from "vitest";
import {
  type DiscountLevel,
  type DiscountRule,
  selectDiscount,
} from "../../src/billing/charging/discount-rules";
import { parseMoney } from "../../src/kernel/money";

const model = "alpha-large";
const otherModel = "beta-small";
const organizationId = "org-acme";
const otherOrganizationId = "org-globex";

/** One rule per level, each with a distinct rate so the winner is visible. */
const ruleAt = {
  "model-and-organization": { model, organizationId, rate: parseMoney("0.4") },
  organization: { model: null, organizationId, rate: parseMoney("0.3") },
  model: { model, organizationId: null, rate: parseMoney("0.2") },
  global: { model: null, organizationId: null, rate: parseMoney("0.1") },
} satisfies Record<Exclude<DiscountLevel, "none">, DiscountRule>;

type Level = keyof typeof ruleAt;
const levels = Object.keys(ruleAt) as Level[];

/** Every subset of the four levels. */
const subsets: Level[][] = Array.from({ length: 2 ** levels.length }, (_, mask) =>
  levels.filter((_level, index) => (mask & (1 << index)) !== 0),
);

/** The expected winner by C7's order, (any, any) last; personal keys see only organization = any. */
function expectedLevel(present: readonly Level[], personal: boolean): DiscountLevel {
  const order: Level[] = personal
    ? ["model", "global"]
    : ["model-and-organization", "organization", "model", "global"];
  return order.find((level) => present.includes(level)) ?? "none";
}

function rateOf(level: DiscountLevel): string {
  return level === "none" ? "0" : ruleAt[level].rate.toFixed();
}

describe("selectDiscount precedence over every combination of rules", () => {
  const organizationCases = subsets.map((present) => [present.join(" + ") || "no rules", present] as const);

  it.each(organizationCases)("organization key with %s", (_name, present) => {
    // given rules at the levels present, plus rules for another model and another organization
    const rules: DiscountRule[] = [
      ...present.map((level) => ruleAt[level]),
      { model: otherModel, organizationId, rate: parseMoney("0.9") },
      { model, organizationId: otherOrganizationId, rate: parseMoney("0.8") },
      { model: null, organizationId: otherOrganizationId, rate: parseMoney("0.7") },
    ];
    // when
    const selection = selectDiscount(rules, { model, organizationId });
    // then
    const level = expectedLevel(present, false);
    expect(selection.level).toBe(level);
    expect(selection.rate.toFixed()).toBe(rateOf(level));
  });

  it.each(organizationCases)("personal key with %s", (_name, present) => {
    // given the same rules
    const rules = present.map((level) => ruleAt[level]);
    // when a personal key (no organization) asks
    const selection = selectDiscount(rules, { model, organizationId: null });
    // then organization rules never apply
    const level = expectedLevel(present, true);
    expect(selection.level).toBe(level);
    expect(selection.rate.toFixed()).toBe(rateOf(level));
  });
});

describe("selectDiscount edge cases", () => {
  it("lets a more specific rule of 0 exempt an organization from a broader discount", () => {
    // given 20% off the model for everyone, 0% for this organization on this model
    const rules: DiscountRule[] = [
      { model, organizationId: null, rate: parseMoney("0.2") },
      { model, organizationId, rate: parseMoney("0") },
    ];
    // when
    const selection = selectDiscount(rules, { model, organizationId });
    // then
    expect(selection).toEqual({ rate: parseMoney("0"), level: "model-and-organization" });
  });

  it("returns 0 with level none when no rule exists", () => {
    // given no rules
    // when
    const selection = selectDiscount([], { model, organizationId });
    // then
    expect(selection.level).toBe("none");
    expect(selection.rate.isZero()).toBe(true);
  });

  it("rejects two rules for the same (model, organization)", () => {
    // given a duplicate key, which the discounts projection can never produce
    const rules: DiscountRule[] = [
      { model, organizationId, rate: parseMoney("0.1") },
      { model, organizationId, rate: parseMoney("0.2") },
    ];
    // when / then
    expect(() => selectDiscount(rules, { model, organizationId })).toThrow(/duplicate/);
  });

  it("rejects a rate outside [0, 1]", () => {
    // given
    const rules: DiscountRule[] = [{ model, organizationId: null, rate: parseMoney("1.5") }];
    // when / then
    expect(() => selectDiscount(rules, { model, organizationId: null })).toThrow(RangeError);
  });
});
