import type { IsoDate } from "../../kernel/seoul-calendar";

/**
 * Operational failures of the Korea Eximbank FX source, mapped once at the edge (admin API, worker log).
 * Messages are built only from values we control (dates, status codes, error codes): never from a URL,
 * a foreign error message or a `cause`, so the authkey cannot reach a log through them.
 */
export type KoreaeximErrorKind =
  | "result-code"
  | "http-status"
  | "malformed-response"
  | "unavailable"
  | "no-rate-found";

export abstract class KoreaeximError extends Error {
  abstract readonly kind: KoreaeximErrorKind;
}

/** What the bank's `result` field says when it is not 1 (success). */
export type KoreaeximResultCodeReason =
  | "data-code-error"
  | "authkey-error"
  | "daily-request-limit-exceeded"
  | "unknown-result-code";

export function reasonOfResultCode(resultCode: number): KoreaeximResultCodeReason {
  if (resultCode === 2) return "data-code-error";
  if (resultCode === 3) return "authkey-error";
  if (resultCode === 4) return "daily-request-limit-exceeded";
  return "unknown-result-code";
}

function describeReason(reason: KoreaeximResultCodeReason): string {
  switch (reason) {
    case "data-code-error":
      return "the data code was rejected";
    case "authkey-error":
      return "the authkey was rejected (check KOREAEXIM_AUTHKEY)";
    case "daily-request-limit-exceeded":
      return "the daily request limit is exhausted";
    case "unknown-result-code":
      return "an undocumented result code";
    default: {
      const unreachable: never = reason;
      throw new Error(`unhandled result code reason: ${String(unreachable)}`);
    }
  }
}

/** `result` ≠ 1 is an error, not a rate (C7). Never retried: the same request gets the same answer. */
export class KoreaeximResultCodeError extends KoreaeximError {
  override readonly name = "KoreaeximResultCodeError";
  readonly kind = "result-code";
  readonly reason: KoreaeximResultCodeReason;

  constructor(
    readonly resultCode: number,
    readonly searchDate: IsoDate,
  ) {
    const reason = reasonOfResultCode(resultCode);
    super(`Korea Eximbank answered result ${resultCode} for ${searchDate}: ${describeReason(reason)}`);
    this.reason = reason;
  }
}

/** A status that retrying will not fix (3xx, 4xx). Redirects are not followed: they would carry the key. */
export class KoreaeximHttpStatusError extends KoreaeximError {
  override readonly name = "KoreaeximHttpStatusError";
  readonly kind = "http-status";

  constructor(
    readonly status: number,
    readonly searchDate: IsoDate,
  ) {
    super(`Korea Eximbank answered HTTP ${status} for ${searchDate}`);
  }
}

export class KoreaeximMalformedResponseError extends KoreaeximError {
  override readonly name = "KoreaeximMalformedResponseError";
  readonly kind = "malformed-response";

  constructor(
    readonly problem: string,
    readonly searchDate: IsoDate,
  ) {
    super(`Korea Eximbank answer for ${searchDate} is malformed: ${problem}`);
  }
}

export type KoreaeximTransientFailure = "timeout" | "network" | "server-error";

/** Transient failures (network, timeout, 5xx) outlasted every retry. */
export class KoreaeximUnavailableError extends KoreaeximError {
  override readonly name = "KoreaeximUnavailableError";
  readonly kind = "unavailable";

  constructor(
    readonly searchDate: IsoDate,
    readonly attempts: number,
    readonly lastFailure: KoreaeximTransientFailure,
    /** An error code such as "ECONNRESET" or an HTTP status such as "503"; never free text. */
    readonly lastFailureDetail: string,
  ) {
    super(
      `Korea Eximbank unavailable for ${searchDate} after ${attempts} attempts (last: ${lastFailure} ${lastFailureDetail})`,
    );
  }
}

/** Every day of the walk-back answered with an empty list. */
export class KoreaeximNoRateFoundError extends KoreaeximError {
  override readonly name = "KoreaeximNoRateFoundError";
  readonly kind = "no-rate-found";

  constructor(
    readonly appliesOn: IsoDate,
    readonly earliestSearchDate: IsoDate,
    readonly latestSearchDate: IsoDate,
    readonly daysSearched: number,
  ) {
    super(
      `no Korea Eximbank USD rate published from ${earliestSearchDate} to ${latestSearchDate} (${daysSearched} days) for ${appliesOn}`,
    );
  }
}
