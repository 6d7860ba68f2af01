import type { UpstreamAdapter } from "../upstream-adapter";
import type { CircuitBreaker } from "./circuit-breaker";

/**
 * One upstream endpoint (a base URL and key) as the gateway sees it: the requests it is serving now, and
 * its adapter per protocol. Shared by every model served through it, so its capacity is the endpoint's;
 * its breakers are per model (`RouteEntry`), since a provider often fails one model while serving others.
 */
export class UpstreamEndpoint {
  outstanding = 0;

  constructor(
    readonly name: string,
    /** Requests at once at most; undefined: bounded only by the connection pool. */
    readonly concurrentRequestsMax: number | undefined,
    private readonly adapterOf: (protocol: UpstreamAdapter["protocol"]) => UpstreamAdapter,
  ) {}

  adapter(protocol: UpstreamAdapter["protocol"]): UpstreamAdapter {
    return this.adapterOf(protocol);
  }

  hasCapacity(): boolean {
    return this.concurrentRequestsMax === undefined || this.outstanding < this.concurrentRequestsMax;
  }
}

/**
 * An endpoint as one model uses it: its share of the model's traffic, the id it knows the model by, and
 * the breaker of that model there (a model failing at an endpoint never stops another model's traffic).
 */
export class RouteEntry {
  /** Smooth weighted round robin's running score (nginx's algorithm): spreads by weight, even at c=1. */
  currentWeight = 0;

  constructor(
    readonly endpoint: UpstreamEndpoint,
    readonly breaker: CircuitBreaker,
    readonly weight: number,
    /** Overrides the model's `upstreamModelId` on this endpoint (e.g. a deployment name). */
    readonly upstreamModelId: string | undefined,
  ) {}
}

/**
 * Picks among `entries` by smooth weighted round robin; among equal scores, the endpoint with the fewest
 * requests outstanding. Every entry's score moves, so the spread holds over any sequence of picks.
 */
export function pickByWeight(entries: readonly RouteEntry[]): RouteEntry | undefined {
  if (entries.length === 0) return undefined;
  let totalWeight = 0;
  let best: RouteEntry | undefined;
  for (const entry of entries) {
    entry.currentWeight += entry.weight;
    totalWeight += entry.weight;
    if (
      !best ||
      entry.currentWeight > best.currentWeight ||
      (entry.currentWeight === best.currentWeight && entry.endpoint.outstanding < best.endpoint.outstanding)
    )
      best = entry;
  }
  best!.currentWeight -= totalWeight;
  return best;
}
