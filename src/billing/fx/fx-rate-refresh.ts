import type pg from "pg";
import type { Logger } from "pino";
import { fxRatesTable } from "../../../projections/fx-rates";
import { type IsoDate, seoulDateOf } from "../../kernel/seoul-calendar";
import type { EventStore } from "../../ledger/store/event-store";
import type { CommandOrigin } from "../commands/command-metadata";
import { fxRateUpdatedEventId } from "../commands/deterministic-event-id";
import type { Clock } from "../commands/projection-waiting";
import { createKoreaeximClient, type KoreaeximClient, type KoreaeximRateQuote } from "./koreaexim-client";
import { fxRateStreamIdOf, recordFxRate } from "./record-fx-rate";

/**
 * The FX refresh (C7): on Seoul date D, ask the bank for the rate in force on D (the previous business
 * day's `deal_bas_r`, walking back over empty days) and record it as `FxRateUpdated` applying on D. Run by
 * the daily job scheduler, at start-up when D has no rate, and by `POST /admin/fx-rates/refresh`.
 * A failure records nothing: D keeps the latest earlier rate, and charges record which rate date they used.
 */

export type FxRateRefreshOutcome =
  | { kind: "recorded"; quote: KoreaeximRateQuote }
  /** The bank's rate for D is in the ledger already: nothing fetched, nothing appended. */
  | { kind: "already-recorded"; appliesOn: IsoDate }
  /** No KOREAEXIM_AUTHKEY: FX comes only from the admin API (C2). */
  | { kind: "not-configured" };

export interface FxRateRefresher {
  /** False without KOREAEXIM_AUTHKEY: `refresh` then answers `not-configured`. */
  readonly configured: boolean;
  refresh(origin: CommandOrigin, appliesOn?: IsoDate): Promise<FxRateRefreshOutcome>;
  close(): Promise<void>;
}

export interface FxRateRefresherDependencies {
  store: EventStore;
  clock: Clock;
  logger: Logger;
  /** KOREAEXIM_AUTHKEY; undefined turns the refresh into a no-op. */
  authkey: string | undefined;
  /** KOREAEXIM_URL. */
  url: string;
  /** Tests inject a client built on a fake bank's timing. */
  client?: KoreaeximClient;
}

export function createFxRateRefresher(dependencies: FxRateRefresherDependencies): FxRateRefresher {
  const logger = dependencies.logger.child({ component: "fx-refresh" });
  const client =
    dependencies.client ??
    (dependencies.authkey === undefined
      ? undefined
      : createKoreaeximClient({ authkey: dependencies.authkey, url: dependencies.url, logger }));

  return {
    configured: client !== undefined,
    async refresh(origin, appliesOn = seoulDateOf(dependencies.clock())) {
      if (client === undefined) return { kind: "not-configured" };
      if (await isBankRateRecorded(dependencies.store, appliesOn))
        return { kind: "already-recorded", appliesOn };
      const quote = await client.fetchRateApplyingOn(appliesOn);
      await recordFxRate(
        dependencies,
        {
          appliesOn: quote.appliesOn,
          rateDate: quote.rateDate,
          rateKrwPerUsd: quote.rateKrwPerUsd,
          source: quote.source,
        },
        origin,
      );
      logger.info(
        { appliesOn, rateDate: quote.rateDate, rateKrwPerUsd: quote.rateKrwPerUsd },
        "FX rate recorded",
      );
      return { kind: "recorded", quote };
    },
    async close() {
      if (dependencies.client === undefined) await client?.close();
    },
  };
}

/** Read from the day's stream, not a projection: the answer must not lag behind a refresh that just ran. */
async function isBankRateRecorded(store: EventStore, appliesOn: IsoDate): Promise<boolean> {
  const bankEventId = fxRateUpdatedEventId(appliesOn, "koreaexim");
  const stream = await store.readStream(fxRateStreamIdOf(appliesOn));
  return stream.some((event) => event.eventId === bankEventId);
}

/**
 * Start-up refreshes when D has no rate (C7). A rate recorded by the admin counts; the first-start default
 * does not, so that a fresh install with an authkey fetches the real rate at once.
 */
export async function isFxRefreshNeeded(
  database: Pick<pg.Pool, "query">,
  appliesOn: IsoDate,
): Promise<boolean> {
  const result = await database.query(
    `SELECT 1 FROM ${fxRatesTable.name} WHERE applies_on = $1 AND source <> 'default' LIMIT 1`,
    [appliesOn],
  );
  return result.rows.length === 0;
}
