import type { ResilienceLimits } from "./resilience-limits";

export const breakerStates = ["closed", "open", "half-open"] as const;
export type BreakerState = (typeof breakerStates)[number];

type BreakerLimits = Pick<
  ResilienceLimits,
  | "breakerWindowMs"
  | "breakerAttemptsMin"
  | "breakerFailureRateMin"
  | "breakerOpenMs"
  | "breakerHalfOpenProbesMax"
>;

/** The window is kept as this many buckets: outcomes age out a bucket at a time, in constant memory. */
const bucketCount = 10;

/**
 * One endpoint's circuit breaker. Closed: every attempt goes through and its outcome is counted over the
 * last `breakerWindowMs`; at least `breakerAttemptsMin` attempts of which `breakerFailureRateMin` failed
 * open it. Open: no attempt for `breakerOpenMs`. Half-open: up to `breakerHalfOpenProbesMax` attempts at a
 * time probe it; a success closes it (with a clean window), a failure opens it again.
 */
export class CircuitBreaker {
  private stateValue: BreakerState = "closed";
  private openedAtMs = 0;
  private probesInFlight = 0;
  private readonly attempts = new Array<number>(bucketCount).fill(0);
  private readonly failures = new Array<number>(bucketCount).fill(0);
  /** The bucket `attempts[index]` covers, by its number since the epoch; older ones are stale. */
  private readonly bucketNumbers = new Array<number>(bucketCount).fill(-1);

  constructor(
    private readonly limits: BreakerLimits,
    private readonly onTransition: (to: BreakerState) => void = () => {},
  ) {}

  state(nowMs: number): BreakerState {
    if (this.stateValue === "open" && nowMs - this.openedAtMs >= this.limits.breakerOpenMs)
      this.transition("half-open");
    return this.stateValue;
  }

  /** Whether an attempt may go now (no side effect: `acquire` takes the probe slot). */
  allows(nowMs: number): boolean {
    const state = this.state(nowMs);
    switch (state) {
      case "closed":
        return true;
      case "open":
        return false;
      case "half-open":
        return this.probesInFlight < this.limits.breakerHalfOpenProbesMax;
      default: {
        const unreachable: never = state;
        throw new Error(`unknown breaker state ${String(unreachable)}`);
      }
    }
  }

  /** Called when an attempt starts; returns whether it is a probe, to be passed back to `record`. */
  acquire(nowMs: number): { probe: boolean } {
    if (!this.allows(nowMs)) throw new Error("an attempt went to an endpoint whose breaker refuses it");
    if (this.stateValue !== "half-open") return { probe: false };
    this.probesInFlight += 1;
    return { probe: true };
  }

  /** The outcome of an attempt; `failed: undefined` is one that says nothing of the endpoint (cancelled). */
  record(permit: { probe: boolean }, failed: boolean | undefined, nowMs: number): void {
    if (permit.probe) this.probesInFlight -= 1;
    if (failed === undefined) return;
    if (this.stateValue === "half-open" && permit.probe) {
      if (failed) this.open(nowMs);
      else {
        this.clearWindow();
        this.transition("closed");
      }
      return;
    }
    if (this.stateValue !== "closed") return;
    const index = this.bucketIndex(nowMs);
    this.attempts[index]! += 1;
    if (failed) this.failures[index]! += 1;
    const { attempts, failures } = this.windowCounts(nowMs);
    if (
      attempts >= this.limits.breakerAttemptsMin &&
      failures / attempts >= this.limits.breakerFailureRateMin
    )
      this.open(nowMs);
  }

  /** Attempts and failures counted in the current window (closed state only; cleared on closing). */
  windowCounts(nowMs: number): { attempts: number; failures: number } {
    const current = this.bucketNumberOf(nowMs);
    let attempts = 0;
    let failures = 0;
    for (let index = 0; index < bucketCount; index += 1) {
      if (current - this.bucketNumbers[index]! >= bucketCount) continue;
      attempts += this.attempts[index]!;
      failures += this.failures[index]!;
    }
    return { attempts, failures };
  }

  private open(nowMs: number): void {
    this.openedAtMs = nowMs;
    this.clearWindow();
    this.transition("open");
  }

  private transition(to: BreakerState): void {
    if (this.stateValue === to) return;
    this.stateValue = to;
    this.onTransition(to);
  }

  private clearWindow(): void {
    this.attempts.fill(0);
    this.failures.fill(0);
    this.bucketNumbers.fill(-1);
  }

  private bucketNumberOf(nowMs: number): number {
    return Math.floor(nowMs / Math.max(1, this.limits.breakerWindowMs / bucketCount));
  }

  private bucketIndex(nowMs: number): number {
    const number = this.bucketNumberOf(nowMs);
    const index = number % bucketCount;
    if (this.bucketNumbers[index] !== number) {
      this.bucketNumbers[index] = number;
      this.attempts[index] = 0;
      this.failures[index] = 0;
    }
    return index;
  }
}
