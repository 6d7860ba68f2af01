import { setTimeout as sleepFor } from "node:timers/promises";
import { type Dispatcher, fetch as undiciFetch } from "undici";
import { koreaeximDefaultLimits } from "../../kernel/limits";
import { formatMoney } from "../../kernel/money";
import { type IsoDate, isIsoDate, previousDate, seoulDateOf } from "../../kernel/seoul-calendar";
import { createKoreaeximDispatcher } from "./koreaexim-dispatcher";
import { KoreaeximNoRateFoundError } from "./koreaexim-errors";
import {
  type KoreaeximFetch,
  type KoreaeximLogger,
  type KoreaeximRequestContext,
  type KoreaeximRequestLimits,
  requestDayAnswer,
} from "./koreaexim-request";

export const koreaeximDefaultUrl = "https://oapi.koreaexim.go.kr/site/program/financial/exchangeJSON";

export interface KoreaeximLimits extends KoreaeximRequestLimits {
  /** Search dates tried, D−1 included (C7: "walks back … up to 10 days"). */
  walkBackDaysMax: number;
  connectTimeoutMs: number;
}

/** The rate in force on `appliesOn`: the USD `deal_bas_r` of `rateDate`, the latest business day before. */
export interface KoreaeximRateQuote {
  appliesOn: IsoDate;
  rateDate: IsoDate;
  /** Decimal string, thousands separators stripped: "1483.4". */
  rateKrwPerUsd: string;
  source: "koreaexim";
}

export interface KoreaeximClientOptions {
  /** KOREAEXIM_AUTHKEY. Sent only as a query parameter of the request; never logged, never in an error. */
  authkey: string;
  /** KOREAEXIM_URL; defaults to the bank's public endpoint. */
  url?: string;
  limits?: Partial<KoreaeximLimits>;
  /** Defaults to undici's fetch. */
  fetch?: KoreaeximFetch;
  /** Defaults to an agent that tolerates the bank's legacy TLS; an injected one is not closed by us. */
  dispatcher?: Dispatcher;
  /** Defaults to a real timer; tests pass one that records the delay and returns at once. */
  sleep?: (delayMs: number) => Promise<void>;
  logger?: KoreaeximLogger;
}

export interface KoreaeximClient {
  /** C7: ask for D−1 and walk back over empty answers, up to `walkBackDaysMax` dates. */
  fetchRateApplyingOn(appliesOn: IsoDate): Promise<KoreaeximRateQuote>;
  /** The same, for the Seoul date of `instant` (the refresh job passes its clock's now). */
  fetchRateApplyingAt(instant: Date): Promise<KoreaeximRateQuote>;
  /** Closes the dispatcher this client created; a no-op for an injected one. */
  close(): Promise<void>;
}

function assertLimits(limits: KoreaeximLimits): void {
  for (const [name, value] of Object.entries(limits)) {
    if (!Number.isSafeInteger(value) || value <= 0)
      throw new RangeError(`${name} must be a positive integer`);
  }
}

export function createKoreaeximClient(options: KoreaeximClientOptions): KoreaeximClient {
  if (options.authkey.trim() === "" || /\s/.test(options.authkey)) {
    throw new RangeError("Korea Eximbank authkey must be a non-empty token");
  }
  const limits: KoreaeximLimits = { ...koreaeximDefaultLimits, ...options.limits };
  assertLimits(limits);
  const ownsDispatcher = options.dispatcher === undefined;
  const dispatcher =
    options.dispatcher ?? createKoreaeximDispatcher({ connectTimeoutMs: limits.connectTimeoutMs });
  const context: KoreaeximRequestContext = {
    url: new URL(options.url ?? koreaeximDefaultUrl).toString(),
    authkey: options.authkey,
    fetch: options.fetch ?? undiciFetch,
    dispatcher,
    sleep: options.sleep ?? ((delayMs) => sleepFor(delayMs)),
    limits,
    logger: options.logger,
  };

  async function fetchRateApplyingOn(appliesOn: IsoDate): Promise<KoreaeximRateQuote> {
    if (!isIsoDate(appliesOn)) throw new RangeError(`not a calendar date: ${JSON.stringify(appliesOn)}`);
    let searchDate = previousDate(appliesOn);
    const latestSearchDate = searchDate;
    for (let daysSearched = 1; daysSearched <= limits.walkBackDaysMax; daysSearched += 1) {
      // A date that fails (other than by being empty) stops the walk: skipping it could pick an older
      // rate although the bank did publish one for that date.
      const answer = await requestDayAnswer(context, searchDate);
      switch (answer.kind) {
        case "rate":
          return {
            appliesOn,
            rateDate: searchDate,
            rateKrwPerUsd: formatMoney(answer.rateKrwPerUsd),
            source: "koreaexim",
          };
        case "no-rate-published":
          if (daysSearched === limits.walkBackDaysMax) {
            throw new KoreaeximNoRateFoundError(appliesOn, searchDate, latestSearchDate, daysSearched);
          }
          context.logger?.info(
            { appliesOn, searchDate },
            "no Korea Eximbank rate for this date; walking back",
          );
          searchDate = previousDate(searchDate);
          break;
        default: {
          const unreachable: never = answer;
          throw new Error(`unhandled day answer: ${JSON.stringify(unreachable)}`);
        }
      }
    }
    throw new Error("unreachable: the walk-back loop always returns or throws");
  }

  return {
    fetchRateApplyingOn,
    fetchRateApplyingAt: (instant) => fetchRateApplyingOn(seoulDateOf(instant)),
    close: async () => {
      if (ownsDispatcher) await dispatcher.close();
    },
  };
}
