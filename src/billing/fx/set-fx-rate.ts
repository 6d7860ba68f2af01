import { fxRatesProjection } from "../../../projections/fx-rates";
import { isAcceptableFxRate } from "../../kernel/charge-limits";
import { formatMoney, type Money } from "../../kernel/money";
import { type IsoDate, isIsoDate } from "../../kernel/seoul-calendar";
import { readBackRecorded } from "../../ledger/projection/recorded-not-visible";
import type { CommandOrigin } from "../commands/command-metadata";
import { effectiveInstantAfter } from "../commands/effective-instant";
import type { BillingWriteDependencies } from "../commands/set-model-price";
import { fxRateStreamIdOf, recordFxRate } from "./record-fx-rate";

/**
 * SetFxRate (C6 `POST /admin/fx-rates`): a manual rate for Seoul date `appliesOn`. It is in force from the
 * moment it is recorded, for requests starting on `appliesOn` (and later days without a newer rate); the
 * latest recorded rate of a day wins, so a later bank refresh of the same day supersedes it.
 */
export async function setFxRate(
  dependencies: BillingWriteDependencies,
  rate: { appliesOn: IsoDate; rateDate: IsoDate; rateKrwPerUsd: Money },
  origin: CommandOrigin,
): Promise<{ recordedAt: string }> {
  if (!isIsoDate(rate.appliesOn) || !isIsoDate(rate.rateDate)) throw new RangeError("not a calendar date");
  if (!isAcceptableFxRate(rate.rateKrwPerUsd))
    throw new RangeError(`unacceptable FX rate ${rate.rateKrwPerUsd}`);
  const sameDay = await dependencies.store.readStream(fxRateStreamIdOf(rate.appliesOn));
  const recordedAt = effectiveInstantAfter(sameDay, dependencies.clock).toISOString();
  const appended = await recordFxRate(
    { store: dependencies.store, clock: () => new Date(recordedAt) },
    {
      appliesOn: rate.appliesOn,
      rateDate: rate.rateDate,
      rateKrwPerUsd: formatMoney(rate.rateKrwPerUsd),
      source: "admin",
    },
    origin,
  );
  await readBackRecorded(() =>
    dependencies.waiter.waitFor(
      appended.position,
      [fxRatesProjection.name],
      dependencies.projectionWaitTimeoutMs,
    ),
  );
  return { recordedAt };
}
