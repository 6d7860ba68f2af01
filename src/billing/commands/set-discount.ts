import { randomUUID } from "node:crypto";
import { discountsProjection } from "../../../projections/discounts";
import { isAcceptableDiscountRate } from "../../kernel/charge-limits";
import { formatMoney } from "../../kernel/money";
import { parseLedgerEvent } from "../../ledger/events";
import { readBackRecorded } from "../../ledger/projection/recorded-not-visible";
import { retryingConflicts } from "../../ledger/store/conflict-retry";
import type { ExpectedVersion, RecordedEvent } from "../../ledger/store/event-store";
import { findModel } from "../../providers/catalog";
import type { DiscountRule } from "../charging/discount-rules";
import { type CommandOrigin, metadataOf } from "./command-metadata";
import { effectiveInstantAfter } from "./effective-instant";
import type { BillingWriteDependencies } from "./set-model-price";
import { UnknownModelError } from "./unknown-model-error";

/**
 * SetDiscount (C6 `PUT /admin/discounts`): the rule for one (model or any, organization or any) scope,
 * replacing the scope's previous rule from the moment it is recorded. A rate of 0 is a rule too: it
 * exempts the scope from a broader discount. RemoveDiscount (`DELETE /admin/discounts`) ends the scope's
 * rule from the moment it is recorded, so the next less specific rule applies again: the same event with no
 * rate (`DiscountSet` v2). Neither takes effect before the scope's previous change (effective-instant.ts).
 * Requests already started keep the rule in force at their start (C7).
 */

const anyScope = "*";

export type DiscountScope = Pick<DiscountRule, "model" | "organizationId">;

export const discountStreamIdOf = (scope: DiscountScope) =>
  `discount-${scope.model ?? anyScope}:${scope.organizationId ?? anyScope}`;

/** The scope has no rule in force to remove (404/120 at the edge). */
export class NoDiscountRuleError extends Error {
  override readonly name = "NoDiscountRuleError";
  constructor(scope: DiscountScope) {
    super(
      `No discount rule is in force for model ${scope.model ?? "any"} and organization ${scope.organizationId ?? "any"}`,
    );
  }
}

export async function setDiscount(
  dependencies: BillingWriteDependencies,
  rule: DiscountRule,
  origin: CommandOrigin,
): Promise<{ effectiveAt: string }> {
  if (rule.model !== null && findModel(rule.model) === undefined) throw new UnknownModelError(rule.model);
  if (!isAcceptableDiscountRate(rule.rate)) throw new RangeError(`unacceptable discount rate ${rule.rate}`);
  const changes = await dependencies.store.readStream(discountStreamIdOf(rule));
  return recordDiscount(dependencies, { ...rule, rate: formatMoney(rule.rate) }, origin, {
    changes,
    expectedVersion: "any",
  });
}

/**
 * A model the catalog no longer lists may still have a rule (a models file changed): it can be removed, so no
 * catalog check here; a scope without a rule in force is NoDiscountRuleError either way.
 */
export async function removeDiscount(
  dependencies: BillingWriteDependencies,
  scope: DiscountScope,
  origin: CommandOrigin,
): Promise<{ effectiveAt: string }> {
  const streamId = discountStreamIdOf(scope);
  // Appended at the version it read: a rule set meanwhile is decided on again, never removed unseen.
  return retryingConflicts(async () => {
    const changes = (await dependencies.store.readStreams([streamId])).get(streamId) ?? [];
    // A stream may hold two scopes (an organization named "*" shares the "any organization" scope's): the
    // scope's own last change decides.
    const latest = changes.findLast(
      (change) =>
        change.type === "DiscountSet" &&
        change.data.model === scope.model &&
        change.data.organizationId === scope.organizationId,
    );
    if (latest?.type !== "DiscountSet" || latest.data.rate === null) throw new NoDiscountRuleError(scope);
    return recordDiscount(dependencies, { ...scope, rate: null }, origin, {
      changes,
      expectedVersion: changes.at(-1)!.streamVersion,
    });
  });
}

async function recordDiscount(
  dependencies: BillingWriteDependencies,
  data: DiscountScope & { rate: string | null },
  origin: CommandOrigin,
  stream: { changes: readonly RecordedEvent[]; expectedVersion: ExpectedVersion },
): Promise<{ effectiveAt: string }> {
  const effectiveAt = effectiveInstantAfter(stream.changes, dependencies.clock);
  const event = parseLedgerEvent({
    type: "DiscountSet",
    data: { model: data.model, organizationId: data.organizationId, rate: data.rate },
    metadata: metadataOf(origin, () => effectiveAt),
  });
  const appended = await dependencies.store.append({
    streamId: discountStreamIdOf(data),
    expectedVersion: stream.expectedVersion,
    events: [{ eventId: randomUUID(), event }],
  });
  await readBackRecorded(() =>
    dependencies.waiter.waitFor(
      appended.position,
      [discountsProjection.name],
      dependencies.projectionWaitTimeoutMs,
    ),
  );
  return { effectiveAt: event.metadata.occurredAt };
}
