import type pg from "pg";
import type { Logger } from "pino";
import { fxRatesProjection, fxRatesTable } from "../../../projections/fx-rates";
import { billingLimits } from "../../kernel/limits";
import { seoulDateOf } from "../../kernel/seoul-calendar";
import { parseLedgerEvent } from "../../ledger/events";
import { ProjectionLagError } from "../../ledger/projection/projection-waiter";
import { type EventStore, WrongExpectedVersionError } from "../../ledger/store/event-store";
import { compareLogPositions, type LogPosition, logStart } from "../../ledger/store/log-position";
import { listModels } from "../../providers/catalog";
import { recordFxRate } from "../fx/record-fx-rate";
import { metadataOf } from "./command-metadata";
import { modelPriceSeededEventId } from "./deterministic-event-id";
import type { Clock, ProjectionWaiting } from "./projection-waiting";
import { modelPriceStreamIdOf } from "./set-model-price";

/**
 * First start: the ledger gets the catalog's default prices and, when it has no FX rate at all, the
 * configured default rate (C2 FX_USDKRW_DEFAULT, source `default`). Safe to run at every start and in
 * every process at once:
 * - a model's default price is appended only to a `model-price-<slug>` stream that does not exist yet
 *   (expected "no-stream"): once any price was set for the model, the seed stays out;
 * - the default rate goes to stream `fx-rate-default`, also "no-stream": recorded at most once per ledger,
 *   and only when the FX projection holds no rate. The projection is first awaited up to the price seeds,
 *   which on a fresh ledger are its first events, so that "no rate" is not merely "not projected yet".
 *   It is awaited for as long as it takes: a write transaction held open anywhere on the server (a rebuild,
 *   a session idle in a transaction that wrote) holds every projection back until it ends (docs/ledger.md),
 *   and a check given up would leave a first start with no rate — no request priced — until the next start.
 */

export const seedActor = "system:first-start";
export const defaultFxRateStreamId = "fx-rate-default";

export interface SeedBillingDependencies {
  store: EventStore;
  database: Pick<pg.Pool, "query">;
  waiter: ProjectionWaiting;
  clock: Clock;
  logger: Logger;
  /** FX_USDKRW_DEFAULT. */
  defaultFxRateKrwPerUsd: string;
}

export interface SeedBillingOptions {
  /** Ends the wait for the FX projection (the process is stopping): the next start checks again. */
  signal?: AbortSignal;
}

export async function seedBilling(
  dependencies: SeedBillingDependencies,
  options: SeedBillingOptions = {},
): Promise<{ fxRateSeeded: boolean }> {
  const seededThrough = await seedModelPrices(dependencies);
  if (!(await fxProjectionReached(dependencies, seededThrough, options.signal)))
    return { fxRateSeeded: false };
  const fxRateSeeded = await seedDefaultFxRate(dependencies);
  if (fxRateSeeded) {
    dependencies.logger.info(
      { rateKrwPerUsd: dependencies.defaultFxRateKrwPerUsd },
      "no FX rate in the ledger: recorded the default rate for today",
    );
  }
  return { fxRateSeeded };
}

/** Waits in rounds until the FX projection has applied `target`; false when `signal` ends the wait first. */
async function fxProjectionReached(
  dependencies: SeedBillingDependencies,
  target: LogPosition,
  signal: AbortSignal | undefined,
): Promise<boolean> {
  const roundMs = billingLimits.seedProjectionWaitRoundMs;
  const warnAfterRounds = Math.ceil(billingLimits.firstStartSeedWaitMs / roundMs);
  for (let round = 1; signal?.aborted !== true; round += 1) {
    try {
      await dependencies.waiter.waitFor(target, [fxRatesProjection.name], roundMs);
      if (round > warnAfterRounds)
        dependencies.logger.info("FX projection caught up: default FX rate check runs");
      return true;
    } catch (error) {
      if (!(error instanceof ProjectionLagError)) throw error;
      if (round === warnAfterRounds) {
        dependencies.logger.warn(
          "FX projection not caught up (a long write transaction on the database server?): the default FX rate check waits for it",
        );
      }
    }
  }
  return false;
}

/**
 * A seed stored by an earlier start is reported by the store as an identical retry (same event id), one
 * the admin overrode as a wrong expected version; either way the model has a price.
 */
async function seedModelPrices(dependencies: SeedBillingDependencies): Promise<LogPosition> {
  const metadata = metadataOf({ actor: seedActor }, dependencies.clock);
  const appends = listModels().map((model) => ({
    streamId: modelPriceStreamIdOf(model.slug),
    expectedVersion: "no-stream" as const,
    events: [
      {
        eventId: modelPriceSeededEventId(model.slug),
        event: parseLedgerEvent({
          type: "ModelPriceSet",
          data: {
            model: model.slug,
            inputUsdPerMillionTokens: model.inputUsdPerMillionTokens,
            outputUsdPerMillionTokens: model.outputUsdPerMillionTokens,
            cachedInputUsdPerMillionTokens: model.cachedInputUsdPerMillionTokens,
          },
          metadata,
        }),
      },
    ],
  }));
  const outcomes = await dependencies.store.appendBatch(appends);
  let latest = logStart;
  for (const outcome of outcomes) {
    if (outcome.status === "fulfilled") {
      if (compareLogPositions(outcome.value.position, latest) > 0) latest = outcome.value.position;
    } else if (!(outcome.reason instanceof WrongExpectedVersionError)) {
      throw outcome.reason;
    }
  }
  return latest;
}

async function seedDefaultFxRate(dependencies: SeedBillingDependencies): Promise<boolean> {
  const existing = await dependencies.database.query(`SELECT 1 FROM ${fxRatesTable.name} LIMIT 1`);
  if (existing.rows.length > 0) return false;
  const today = seoulDateOf(dependencies.clock());
  try {
    await recordFxRate(
      dependencies,
      {
        appliesOn: today,
        rateDate: today,
        rateKrwPerUsd: dependencies.defaultFxRateKrwPerUsd,
        source: "default",
      },
      { actor: seedActor },
      { streamId: defaultFxRateStreamId, expectedVersion: "no-stream" },
    );
    return true;
  } catch (error) {
    if (error instanceof WrongExpectedVersionError) return false;
    throw error;
  }
}
