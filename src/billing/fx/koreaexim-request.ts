import type { Dispatcher } from "undici";
import { compactDateOf, type IsoDate } from "../../kernel/seoul-calendar";
import {
  KoreaeximHttpStatusError,
  KoreaeximMalformedResponseError,
  type KoreaeximTransientFailure,
  KoreaeximUnavailableError,
} from "./koreaexim-errors";
import { interpretExchangeBody, type KoreaeximDayAnswer } from "./koreaexim-response";

/** The subset of fetch we use, so that tests and callers can inject undici's `fetch` or a stand-in. */
export interface KoreaeximFetchInit {
  method: "GET";
  headers: Record<string, string>;
  redirect: "manual";
  signal: AbortSignal;
  dispatcher: Dispatcher;
}
export interface KoreaeximFetchResponse {
  status: number;
  body: AsyncIterable<Uint8Array> | null;
}
export type KoreaeximFetch = (url: string, init: KoreaeximFetchInit) => Promise<KoreaeximFetchResponse>;

export interface KoreaeximLogger {
  info(details: Record<string, unknown>, message: string): void;
  warn(details: Record<string, unknown>, message: string): void;
}

export interface KoreaeximRequestLimits {
  /** Whole request, connect to last body byte. */
  requestTimeoutMs: number;
  /** Attempts for one search date, the first included. */
  attemptsPerDateMax: number;
  backoffInitialMs: number;
  backoffMaxMs: number;
  responseBodyBytesMax: number;
}

export interface KoreaeximRequestContext {
  url: string;
  authkey: string;
  fetch: KoreaeximFetch;
  dispatcher: Dispatcher;
  sleep: (delayMs: number) => Promise<void>;
  limits: KoreaeximRequestLimits;
  logger: KoreaeximLogger | undefined;
}

/** The `data` parameter selecting exchange rates (AP02, AP03 are interest rates). */
const exchangeRateDataCode = "AP01";

class TransientFailure {
  constructor(
    readonly failure: KoreaeximTransientFailure,
    readonly detail: string,
  ) {}
}

class BodyTooLarge {}

/** Only a bare error code ("ECONNRESET", "UND_ERR_SOCKET") may leave this module; never free text. */
function errorCodeOf(error: unknown): string {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && typeof current === "object" && current !== null; depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === "string" && /^[A-Z0-9_]{1,64}$/.test(code)) return code;
    current = (current as { cause?: unknown }).cause;
  }
  return "UNKNOWN";
}

export function backoffDelayMs(retryNumber: number, limits: KoreaeximRequestLimits): number {
  return Math.min(limits.backoffInitialMs * 2 ** (retryNumber - 1), limits.backoffMaxMs);
}

function requestUrl(context: KoreaeximRequestContext, searchDate: IsoDate): string {
  const url = new URL(context.url);
  url.searchParams.set("authkey", context.authkey);
  url.searchParams.set("searchdate", compactDateOf(searchDate));
  url.searchParams.set("data", exchangeRateDataCode);
  return url.toString();
}

async function readBodyText(body: AsyncIterable<Uint8Array> | null, bytesMax: number): Promise<string> {
  if (body === null) return "";
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  for await (const chunk of body) {
    bytes += chunk.byteLength;
    if (bytes > bytesMax) throw new BodyTooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** One HTTP exchange: a body, a permanent error, or a TransientFailure to retry. */
async function attemptOnce(context: KoreaeximRequestContext, searchDate: IsoDate): Promise<string> {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), context.limits.requestTimeoutMs);
  try {
    const response = await context.fetch(requestUrl(context, searchDate), {
      method: "GET",
      headers: { accept: "application/json", "user-agent": "won-gateway-fx/1" },
      redirect: "manual",
      signal: controller.signal,
      dispatcher: context.dispatcher,
    });
    if (response.status >= 500) {
      await readBodyText(response.body, context.limits.responseBodyBytesMax).catch(() => "");
      throw new TransientFailure("server-error", String(response.status));
    }
    if (response.status !== 200) throw new KoreaeximHttpStatusError(response.status, searchDate);
    return await readBodyText(response.body, context.limits.responseBodyBytesMax);
  } catch (error) {
    if (error instanceof TransientFailure || error instanceof KoreaeximHttpStatusError) throw error;
    if (error instanceof BodyTooLarge) {
      throw new KoreaeximMalformedResponseError(
        `body larger than ${context.limits.responseBodyBytesMax} bytes`,
        searchDate,
      );
    }
    if (controller.signal.aborted)
      throw new TransientFailure("timeout", `${context.limits.requestTimeoutMs}ms`);
    throw new TransientFailure("network", errorCodeOf(error));
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Asks the bank for one search date, retrying transient failures (network, timeout, 5xx) with bounded
 * exponential backoff. No jitter: one refresh a day cannot stampede, and tests stay deterministic.
 */
export async function requestDayAnswer(
  context: KoreaeximRequestContext,
  searchDate: IsoDate,
): Promise<KoreaeximDayAnswer> {
  const { attemptsPerDateMax } = context.limits;
  for (let attempt = 1; ; attempt += 1) {
    let text: string;
    try {
      text = await attemptOnce(context, searchDate);
    } catch (error) {
      if (!(error instanceof TransientFailure)) throw error;
      if (attempt >= attemptsPerDateMax) {
        throw new KoreaeximUnavailableError(searchDate, attempt, error.failure, error.detail);
      }
      const retryInMs = backoffDelayMs(attempt, context.limits);
      context.logger?.warn(
        { searchDate, attempt, failure: error.failure, detail: error.detail, retryInMs },
        "Korea Eximbank request failed; retrying",
      );
      await context.sleep(retryInMs);
      continue;
    }
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      throw new KoreaeximMalformedResponseError("body is not JSON", searchDate);
    }
    return interpretExchangeBody(body, searchDate);
  }
}
