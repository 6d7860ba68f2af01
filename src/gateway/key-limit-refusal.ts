import type { KeyLimitKind } from "../billing/holds/hold-refusal";
import { startOfNextSeoulMonth } from "../kernel/seoul-calendar";
import { type ApiError, apiErrors } from "./api-error";

/**
 * The answer to a hold refused by one of its key's own limits (C13). The rate window is the minute of the
 * database clock (migration 5's `key_request_windows`); the gateway's clock stands in for it, so the wait is
 * rounded up to whole seconds and never less than one.
 */
export function keyLimitRefusalOf(refusal: { reason: KeyLimitKind; limit: string }, now: Date): ApiError {
  switch (refusal.reason) {
    case "rate":
      return apiErrors.keyRateLimited(refusal.limit, secondsUntilNextMinuteOf(now));
    case "monthly-spend":
      return apiErrors.keySpendLimitReached({
        kind: "monthly-spend",
        value: refusal.limit,
        resetsAt: startOfNextSeoulMonth(now),
      });
    case "total-spend":
      return apiErrors.keySpendLimitReached({ kind: "total-spend", value: refusal.limit });
    default: {
      const unreachable: never = refusal.reason;
      throw new Error(`unknown key limit ${String(unreachable)}`);
    }
  }
}

const minuteMs = 60_000;

/** Whole seconds until the next minute of `now` begins: 1 to 60. */
export function secondsUntilNextMinuteOf(now: Date): number {
  const remainingMs = minuteMs - (now.getTime() % minuteMs);
  return Math.max(1, Math.ceil(remainingMs / 1_000));
}
