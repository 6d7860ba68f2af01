import { isAcceptableDiscountRate } from "../../kernel/charge-limits";
import { Money } from "../../kernel/money";

/** One row of `PUT /admin/discounts`: `null` means "any". */
export interface DiscountRule {
  model: string | null;
  organizationId: string | null;
  rate: Money;
}

export interface DiscountRequest {
  model: string;
  /** `null` for a personal key. */
  organizationId: string | null;
}

/**
 * Which level of rule applied, most specific first. C7 lists (model, org) > (any, org) > (model, any),
 * then "none: 0". The contract is silent on (any, any), which the admin API can nevertheless store; we
 * treat it as a global rule below the three listed levels, for personal and organization keys alike,
 * because an admin who sets it means "everyone" and ignoring it would make that call silently do nothing.
 */
export type DiscountLevel = "model-and-organization" | "organization" | "model" | "global" | "none";

export interface DiscountSelection {
  rate: Money;
  level: DiscountLevel;
}

const levelsByPrecedence = ["model-and-organization", "organization", "model", "global"] as const;

function ruleMatchesLevel(
  rule: DiscountRule,
  level: (typeof levelsByPrecedence)[number],
  request: DiscountRequest,
): boolean {
  switch (level) {
    case "model-and-organization":
      return (
        request.organizationId !== null &&
        rule.model === request.model &&
        rule.organizationId === request.organizationId
      );
    case "organization":
      return (
        request.organizationId !== null &&
        rule.model === null &&
        rule.organizationId === request.organizationId
      );
    case "model":
      return rule.model === request.model && rule.organizationId === null;
    case "global":
      return rule.model === null && rule.organizationId === null;
    default: {
      const unreachable: never = level;
      throw new Error(`unhandled discount level: ${String(unreachable)}`);
    }
  }
}

function ruleKey(rule: DiscountRule): string {
  return JSON.stringify([rule.model, rule.organizationId]);
}

/** Rules come from a projection keyed by (model, organization); a duplicate key is a programmer error. */
function assertRules(rules: readonly DiscountRule[]): void {
  const seen = new Set<string>();
  for (const rule of rules) {
    const key = ruleKey(rule);
    if (seen.has(key)) throw new Error(`duplicate discount rule for (model, organization) ${key}`);
    seen.add(key);
    if (!isAcceptableDiscountRate(rule.rate)) throw new RangeError(`discount rate out of range at ${key}`);
  }
}

/**
 * The discount in force for a request (C7): the most specific matching rule wins, even when its rate is
 * 0 — that is how an organization is exempted from a broader discount. Personal keys (organization
 * `null`) only ever match rules whose organization is "any".
 */
export function selectDiscount(rules: readonly DiscountRule[], request: DiscountRequest): DiscountSelection {
  assertRules(rules);
  for (const level of levelsByPrecedence) {
    const rule = rules.find((candidate) => ruleMatchesLevel(candidate, level, request));
    if (rule !== undefined) return { rate: rule.rate, level };
  }
  return { rate: new Money(0), level: "none" };
}
