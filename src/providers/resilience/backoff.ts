import { assert } from "../../kernel/assert";
import type { ResilienceLimits } from "./resilience-limits";

/**
 * How long retry number `retry` (1 for the first) waits: a step doubling from `backoffBaseMs` up to
 * `backoffMaxMs`, of which half is waited for sure and the other half at random. The random half keeps the
 * requests an outage failed together from coming back together; the sure half keeps a retry from coming at
 * once. `random` gives a number in [0, 1), as `Math.random` does.
 */
export function backoffDelayMs(
  retry: number,
  limits: Pick<ResilienceLimits, "backoffBaseMs" | "backoffMaxMs">,
  random: () => number,
): number {
  assert(Number.isInteger(retry) && retry >= 1, `a backoff is for a retry (1, 2, …), not ${retry}`);
  const stepMs = Math.min(limits.backoffMaxMs, limits.backoffBaseMs * 2 ** (retry - 1));
  return Math.round(stepMs / 2 + (random() * stepMs) / 2);
}
