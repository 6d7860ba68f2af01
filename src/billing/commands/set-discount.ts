import { randomUUID } from "node:crypto";
import { discountsProjection } from "../../../projections/discounts";
import { formatMoney } from "../../kernel/money";
import { parseLedgerEvent } from "../../ledger/events";
import { findModel } from "../../providers/catalog";
import { isAcceptableDiscountRate } from "../charging/charge-limits";
import type { DiscountRule } from "../charging/discount-rules";
import { type CommandOrigin, metadataOf } from "./command-metadata";
import type { BillingWriteDependencies } from "./set-model-price";
import { UnknownModelError } from "./unknown-model-error";

/**
 * SetDiscount (C6 `PUT /admin/discounts`): the rule for one (model or any, organization or any) scope,
 * replacing the scope's previous rule from the moment it is recorded. A rate of 0 is a rule too: it
 * exempts the scope from a broader discount.
 */

const anyScope = "*";

export const discountStreamIdOf = (rule: Pick<DiscountRule, "model" | "organizationId">) =>
  `discount-${rule.model ?? anyScope}:${rule.organizationId ?? anyScope}`;

export async function setDiscount(
  dependencies: BillingWriteDependencies,
  rule: DiscountRule,
  origin: CommandOrigin,
): Promise<{ effectiveAt: string }> {
  if (rule.model !== null && findModel(rule.model) === undefined) throw new UnknownModelError(rule.model);
  if (!isAcceptableDiscountRate(rule.rate)) throw new RangeError(`unacceptable discount rate ${rule.rate}`);
  const event = parseLedgerEvent({
    type: "DiscountSet",
    data: { model: rule.model, organizationId: rule.organizationId, rate: formatMoney(rule.rate) },
    metadata: metadataOf(origin, dependencies.clock),
  });
  const appended = await dependencies.store.append({
    streamId: discountStreamIdOf(rule),
    expectedVersion: "any",
    events: [{ eventId: randomUUID(), event }],
  });
  await dependencies.waiter.waitFor(
    appended.position,
    [discountsProjection.name],
    dependencies.projectionWaitTimeoutMs,
  );
  return { effectiveAt: event.metadata.occurredAt };
}
