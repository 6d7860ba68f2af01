import { randomUUID } from "node:crypto";
import { pricesProjection } from "../../../projections/prices";
import { isAcceptableUnitPrice } from "../../kernel/charge-limits";
import { formatMoney, type Money } from "../../kernel/money";
import { parseLedgerEvent } from "../../ledger/events";
import { readBackRecorded } from "../../ledger/projection/recorded-not-visible";
import type { EventStore } from "../../ledger/store/event-store";
import { findModel } from "../../providers/catalog";
import { type CommandOrigin, metadataOf } from "./command-metadata";
import { effectiveInstantAfter } from "./effective-instant";
import type { Clock, ProjectionWaiting } from "./projection-waiting";
import { UnknownModelError } from "./unknown-model-error";

/**
 * SetModelPrice (C6 `PUT /admin/models/:slug/price`): a new price, in force from the moment it is recorded,
 * and never before the model's previous price (effective-instant.ts).
 */

export const modelPriceStreamIdOf = (model: string) => `model-price-${model}`;

export interface ModelPrice {
  model: string;
  inputUsdPerMillionTokens: Money;
  outputUsdPerMillionTokens: Money;
  cachedInputUsdPerMillionTokens: Money;
}

export interface BillingWriteDependencies {
  store: EventStore;
  waiter: ProjectionWaiting;
  clock: Clock;
  projectionWaitTimeoutMs: number;
}

export async function setModelPrice(
  dependencies: BillingWriteDependencies,
  price: ModelPrice,
  origin: CommandOrigin,
): Promise<{ effectiveAt: string }> {
  if (findModel(price.model) === undefined) throw new UnknownModelError(price.model);
  for (const unitPrice of [
    price.inputUsdPerMillionTokens,
    price.outputUsdPerMillionTokens,
    price.cachedInputUsdPerMillionTokens,
  ]) {
    if (!isAcceptableUnitPrice(unitPrice)) throw new RangeError(`unacceptable unit price ${unitPrice}`);
  }
  const streamId = modelPriceStreamIdOf(price.model);
  const effectiveAt = effectiveInstantAfter(
    await dependencies.store.readStream(streamId),
    dependencies.clock,
  );
  const event = parseLedgerEvent({
    type: "ModelPriceSet",
    data: {
      model: price.model,
      inputUsdPerMillionTokens: formatMoney(price.inputUsdPerMillionTokens),
      outputUsdPerMillionTokens: formatMoney(price.outputUsdPerMillionTokens),
      cachedInputUsdPerMillionTokens: formatMoney(price.cachedInputUsdPerMillionTokens),
    },
    metadata: metadataOf(origin, () => effectiveAt),
  });
  const appended = await dependencies.store.append({
    streamId,
    expectedVersion: "any",
    events: [{ eventId: randomUUID(), event }],
  });
  // The next charge and the next read see the new price.
  await readBackRecorded(() =>
    dependencies.waiter.waitFor(
      appended.position,
      [pricesProjection.name],
      dependencies.projectionWaitTimeoutMs,
    ),
  );
  return { effectiveAt: event.metadata.occurredAt };
}
