import { discountsProjection } from "../../../projections/discounts";
import { fxRatesProjection } from "../../../projections/fx-rates";
import { pricesProjection } from "../../../projections/prices";
import { assert } from "../../kernel/assert";
import { chargeDecimalPlaces, Money } from "../../kernel/money";
import {
  type AccountReference,
  type EventData,
  type LedgerEventOf,
  parseLedgerEvent,
  type UsageTokens,
} from "../../ledger/events";
import {
  type EventStore,
  type RecordedEventOf,
  type StreamAppend,
  WrongExpectedVersionError,
} from "../../ledger/store/event-store";
import { compareLogPositions, type LogPosition } from "../../ledger/store/log-position";
import { billingMetrics } from "../billing-metrics";
import { correctionChargedEventId, usageChargedEventId } from "../commands/deterministic-event-id";
import type { Clock, ProjectionWaiting } from "../commands/projection-waiting";
import { keyKindLabelOf } from "../metric-labels";
import { assertWonNotNegative } from "../money-invariants";
import {
  type ChargePricingReadModel,
  type PricingInForce,
  type PricingRequest,
  PricingUnavailableError,
} from "../read-models/pricing-read-model";
import { assertChargeInput, type ChargeBreakdown, type ChargeInput } from "./charge-calculation";
import { recordedBreakdownOf, tokenCountsForPricing } from "./recorded-charge-breakdown";
import {
  expectedVersionOf,
  isFullyCharged,
  readUsageStream,
  type UsageStreamState,
} from "./usage-stream-state";

/**
 * ChargeUsage: the command the reconciler runs for each request. It turns the request's `UsageRecorded`
 * into exactly one `UsageCharged` in the same stream (and a correcting usage into exactly one charge of the
 * difference: see usage-stream-state.ts), however often it runs and however many workers run it at once:
 * - the charge is appended right after the usage (expected version: the usage's), so a second charge of the same
 *   usage is refused by the store (WrongExpectedVersion = someone else charged it: success);
 * - its event id is derived from the request id, so a retry of an append whose answer was lost is
 *   recognised by the store as the same event.
 */

export const usageStreamIdOf = (requestId: string) => `usage-${requestId}`;
export const reconcilerActor = "system:reconciler";

/** The projections a charge reads; it waits until they have applied the usage's position. */
export const pricingProjectionNames = [
  pricesProjection.name,
  discountsProjection.name,
  fxRatesProjection.name,
] as const;

export interface ChargeUsageDependencies {
  /** `append` may be a group-commit appender: many workers' charges then share one commit. */
  store: Pick<EventStore, "readStream" | "readStreams" | "append">;
  waiter: ProjectionWaiting;
  pricing: ChargePricingReadModel;
  clock: Clock;
  projectionWaitTimeoutMs: number;
}

/**
 * `charged`: this run's append is in the ledger — appended now, or recognised by the store as identical to
 * one a concurrent run stored a moment earlier (same derived event id). Either way there is one charge.
 * `already-charged`: the stream held the charge before this run appended anything.
 */
export type ChargeUsageOutcome =
  | { kind: "charged"; amountWon: string; position: LogPosition }
  | { kind: "already-charged" };

/** The usage stream holds no `UsageRecorded`: the job names a request that was never recorded. */
export class UsageNotRecordedError extends Error {
  override readonly name = "UsageNotRecordedError";
  constructor(readonly requestId: string) {
    super(`no UsageRecorded in stream ${usageStreamIdOf(requestId)}`);
  }
}

/** Whose discount applies: an organization key's organization; a personal key matches only "any" (C7). */
export function discountOrganizationOf(account: AccountReference): string | null {
  return account.kind === "organization" ? account.id : null;
}

export async function chargeUsage(
  dependencies: ChargeUsageDependencies,
  requestId: string,
): Promise<ChargeUsageOutcome> {
  const outcome = (await chargeUsages(dependencies, [requestId])).get(requestId);
  assert(outcome, `chargeUsages gave no outcome for ${requestId}`);
  if (outcome.status === "rejected") throw outcome.reason;
  return outcome.value;
}

/**
 * ChargeUsage for many requests at once, each with its own outcome: one read of all their streams, one
 * query of the terms in force (a second for corrections a fallback answered), one statement pricing every
 * charge (`ledger_charge_breakdown`), and appends that a group-commit appender writes in one statement. Each
 * charge keeps its own stream, expected version and derived event id, so exactly-once holds for each as it
 * does alone.
 */
export async function chargeUsages(
  dependencies: ChargeUsageDependencies,
  requestIds: readonly string[],
): Promise<Map<string, PromiseSettledResult<ChargeUsageOutcome>>> {
  const outcomes = new Map<string, PromiseSettledResult<ChargeUsageOutcome>>();
  const settle = (requestId: string, outcome: ChargeUsageOutcome) =>
    outcomes.set(requestId, { status: "fulfilled", value: outcome });
  const fail = (requestId: string, reason: unknown) =>
    outcomes.set(requestId, { status: "rejected", reason });

  const distinct = [...new Set(requestIds)];
  const streams = await dependencies.store.readStreams(distinct.map(usageStreamIdOf));
  const toCharge: UsageStreamState[] = [];
  for (const requestId of distinct) {
    const reading = readUsageStream(streams.get(usageStreamIdOf(requestId)) ?? []);
    switch (reading.kind) {
      case "not-recorded":
        fail(requestId, new UsageNotRecordedError(requestId));
        break;
      // Any other shape is a bug upstream.
      case "malformed":
        fail(requestId, new Error(`stream ${usageStreamIdOf(requestId)} is ${reading.reason}`));
        break;
      case "state":
        if (isFullyCharged(reading.state)) settle(requestId, { kind: "already-charged" });
        else toCharge.push(reading.state);
        break;
      default: {
        const unreachable: never = reading;
        throw new Error(`unknown reading ${JSON.stringify(unreachable)}`);
      }
    }
  }
  if (toCharge.length === 0) return outcomes;

  // Read-your-writes on the pricing side: a price set before the request started is always seen.
  const latest = toCharge
    .map((state) => state.correction ?? state.recorded)
    .reduce((found, usage) => (compareLogPositions(usage.position, found.position) > 0 ? usage : found));
  await dependencies.waiter.waitFor(
    latest.position,
    pricingProjectionNames,
    dependencies.projectionWaitTimeoutMs,
  );
  const pricings = await dependencies.pricing.pricingEachAt(
    toCharge.map(({ recorded }) => pricingRequestOf(recorded.data)),
  );
  // Matched by place: a pricing out of step would charge one request at another's prices.
  assert(pricings.length === toCharge.length, `${pricings.length} pricings for ${toCharge.length} usages`);
  const correctionPricings = await pricingsOfCorrectionsByAnotherModel(dependencies.pricing, toCharge);
  // Every charge of the batch goes into one list; each stream keeps the places of its own (null: none).
  const toPrice: { state: UsageStreamState; firstAt: number | null; correctionAt: number | null }[] = [];
  const inputs: ChargeInput[] = [];
  const placeOf = (input: ChargeInput | null) => (input ? inputs.push(input) - 1 : null);
  toCharge.forEach((state, index) => {
    const pricing = pricings[index] as PricingInForce | PricingUnavailableError;
    const correctionPricing = correctionPricings.get(state) ?? pricing;
    const requestId = state.recorded.data.requestId;
    for (const unavailable of [pricing, correctionPricing]) {
      if (unavailable instanceof PricingUnavailableError) {
        fail(requestId, unavailable);
        return;
      }
    }
    try {
      const { first, correction } = chargeInputsOf(
        state,
        pricing as PricingInForce,
        correctionPricing as PricingInForce,
      );
      // Checked one by one, so that a usage the formula refuses fails alone (RangeError), not the statement.
      for (const input of [first, correction]) if (input) assertChargeInput(input);
      toPrice.push({ state, firstAt: placeOf(first), correctionAt: placeOf(correction) });
    } catch (error) {
      fail(requestId, error);
    }
  });
  if (toPrice.length === 0) return outcomes;
  const breakdowns = await dependencies.pricing.chargeBreakdowns(inputs);
  assert(breakdowns.length === inputs.length, `${breakdowns.length} breakdowns for ${inputs.length} charges`);
  const breakdownAt = (place: number | null) =>
    place === null ? null : (breakdowns[place] as ChargeBreakdown);
  await Promise.all(
    toPrice.map(async ({ state, firstAt, correctionAt }) => {
      const requestId = state.recorded.data.requestId;
      const priced = { first: breakdownAt(firstAt), correction: breakdownAt(correctionAt) };
      try {
        settle(requestId, await appendCharges(dependencies, state, priced));
      } catch (error) {
        fail(requestId, error);
      }
    }),
  );
  return outcomes;
}

/**
 * The terms a usage is charged under: its model's (the one that answered it), with its account's discount,
 * in force at its start. The orphan sweep prices its settlements by the same.
 */
export function pricingRequestOf(
  usage: Pick<EventData<"UsageRecorded">, "model" | "account" | "startedAt">,
): PricingRequest {
  return {
    model: usage.model,
    organizationId: discountOrganizationOf(usage.account),
    startedAt: new Date(usage.startedAt),
  };
}

/**
 * The pricing of each correction still to charge whose model is not its first usage's: the orphan sweep
 * estimated the request as the model asked for, and the gateway's delivered usage names the fallback that
 * answered, which is what it is charged as (and what the gateway pended it at). Rare: read apart, only then.
 */
async function pricingsOfCorrectionsByAnotherModel(
  pricing: ChargePricingReadModel,
  states: readonly UsageStreamState[],
): Promise<Map<UsageStreamState, PricingInForce | PricingUnavailableError>> {
  const corrected = states.filter(
    (state) =>
      state.correction !== undefined &&
      !state.correctionCharged &&
      state.correction.data.model !== state.recorded.data.model,
  );
  if (corrected.length === 0) return new Map();
  const pricings = await pricing.pricingEachAt(
    corrected.map((state) => pricingRequestOf((state.correction as RecordedEventOf<"UsageRecorded">).data)),
  );
  assert(
    pricings.length === corrected.length,
    `${pricings.length} pricings for ${corrected.length} corrections`,
  );
  return new Map(corrected.map((state, index) => [state, pricings[index]!]));
}

/**
 * The charges a usage stream still lacks, as the formula's inputs: its first usage's, its correction's (null:
 * already charged or none). A correction is priced at the request's start as its first usage is, as the model
 * it names (`correctionPricing`: the first's pricing unless a fallback answered it).
 */
function chargeInputsOf(
  state: UsageStreamState,
  pricing: PricingInForce,
  correctionPricing: PricingInForce,
): { first: ChargeInput | null; correction: ChargeInput | null } {
  const inputOf = (usage: RecordedEventOf<"UsageRecorded">, terms: PricingInForce): ChargeInput => ({
    tokens: tokenCountsForPricing(usage.data.tokens),
    unitPrices: terms.unitPrices,
    fxRate: terms.fxRate,
    discountRate: terms.discount.rate,
  });
  return {
    first: state.charged ? null : inputOf(state.recorded, pricing),
    correction:
      state.correction && !state.correctionCharged ? inputOf(state.correction, correctionPricing) : null,
  };
}

/**
 * Appends what the stream still lacks: the first usage's charge, the correction's, or both in one append,
 * from the breakdowns priced for them (`chargeInputsOf`).
 */
async function appendCharges(
  dependencies: ChargeUsageDependencies,
  state: UsageStreamState,
  breakdowns: { first: ChargeBreakdown | null; correction: ChargeBreakdown | null },
): Promise<ChargeUsageOutcome> {
  const requestId = state.recorded.data.requestId;
  const events: StreamAppend["events"][number][] = [];
  let first: { eventId: string; amountWon: string; tokens: UsageTokens };
  if (state.charged) {
    first = {
      eventId: state.charged.eventId,
      amountWon: state.charged.data.amountWon,
      tokens: state.charged.data.breakdown.tokens,
    };
  } else {
    assert(breakdowns.first, `no breakdown for the first charge on ${state.recorded.streamId}`);
    const charged = chargeEventOf(dependencies, state.recorded, breakdowns.first, null);
    first = {
      eventId: usageChargedEventId(requestId),
      amountWon: charged.data.amountWon,
      tokens: charged.data.breakdown.tokens,
    };
    events.push({ eventId: first.eventId, event: charged });
  }
  let correctionWon: string | undefined;
  if (state.correction && !state.correctionCharged) {
    assert(breakdowns.correction, `no breakdown for the correction's charge on ${state.recorded.streamId}`);
    const charged = chargeEventOf(dependencies, state.correction, breakdowns.correction, {
      correctsEventId: first.eventId,
      correctedAmountWon: first.amountWon,
      correctedTokens: first.tokens,
    });
    correctionWon = charged.data.amountWon;
    events.push({ eventId: correctionChargedEventId(requestId), event: charged });
  }
  assert(events.length > 0, `nothing to charge on ${state.recorded.streamId}`);
  try {
    const appended = await dependencies.store.append({
      streamId: state.recorded.streamId,
      expectedVersion: expectedVersionOf(state),
      events,
    });
    const lagFrom = (state.correction ?? state.recorded).recordedAt;
    if (!state.charged)
      billingMetrics.observeCharge({
        requestedModel: state.requestedModel,
        chargedModel: state.recorded.data.model,
        keyKind: keyKindLabelOf(state.recorded.data.account.kind),
        amountWon: first.amountWon,
        lagSeconds: (dependencies.clock().getTime() - lagFrom.getTime()) / 1_000,
      });
    if (correctionWon !== undefined) billingMetrics.observeCorrection(correctionWon);
    const amountWon = events
      .reduce(
        (total, { event }) => total.plus((event as LedgerEventOf<"UsageCharged">).data.amountWon),
        new Money(0),
      )
      .toFixed(chargeDecimalPlaces);
    return { kind: "charged", amountWon, position: appended.position };
  } catch (error) {
    if (!(error instanceof WrongExpectedVersionError)) throw error;
    const again = readUsageStream(await dependencies.store.readStream(state.recorded.streamId));
    if (again.kind === "state" && isFullyCharged(again.state)) return { kind: "already-charged" };
    throw error;
  }
}

/**
 * The charge of one usage. For a correction, `breakdown` is the delivered usage's whole charge and
 * `amountWon` the difference from the corrected charge; either way `releasedPendingWon` takes out exactly
 * what recording the usage put in pending (C10).
 */
function chargeEventOf(
  dependencies: ChargeUsageDependencies,
  usage: RecordedEventOf<"UsageRecorded">,
  breakdown: ChargeBreakdown,
  correction: { correctsEventId: string; correctedAmountWon: string; correctedTokens: UsageTokens } | null,
): LedgerEventOf<"UsageCharged"> {
  const requestId = usage.data.requestId;
  assertWonNotNegative(breakdown.amountWon, `the charge of ${requestId}`);
  // A first charge releases what its usage put in pending, never negative; a correction's are signed.
  if (correction)
    assertWonNotNegative(correction.correctedAmountWon, `the charge ${requestId}'s correction corrects`);
  else if (usage.data.pendingWon != null)
    assertWonNotNegative(usage.data.pendingWon, `the pending cost of ${requestId}`);
  const amountWon = correction
    ? new Money(breakdown.amountWon).minus(correction.correctedAmountWon).toFixed(chargeDecimalPlaces)
    : breakdown.amountWon;
  return parseLedgerEvent({
    type: "UsageCharged",
    data: {
      requestId,
      keyId: usage.data.keyId,
      account: usage.data.account,
      model: usage.data.model,
      endpoint: usage.data.endpoint,
      startedAt: usage.data.startedAt,
      amountWon,
      breakdown: recordedBreakdownOf(breakdown, usage.data.tokens, usage.data.usageSource),
      releasedPendingWon: usage.data.pendingWon ?? null,
      // Absent on a first charge, so the usual charge is stored as it always was.
      ...(correction ? { correction } : {}),
    },
    metadata: {
      actor: reconcilerActor,
      correlationId: requestId,
      causationId: usage.eventId,
      occurredAt: dependencies.clock().toISOString(),
    },
  }) as LedgerEventOf<"UsageCharged">;
}
