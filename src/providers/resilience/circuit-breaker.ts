import type { ResilienceLimits } from "./resilience-limits";

export const breakerStates = ["closed", "open", "half-open"] as const;
export type BreakerState = (typeof breakerStates)[number];

type BreakerLimits = Pick<
  ResilienceLimits,
  | "breakerWindowMs"
  | "breakerRequestsMin"
  | "breakerFailureRateMin"
  | "breakerOpenMs"
  | "breakerHalfOpenProbesMax"
>;

/**
 * How an attempt got through: `counted` while closed (its request's outcome is what counts), `probe` in a
 * half-open slot, `panic` past a breaker that refused it because every endpoint of the request refused it.
 */
export type BreakerPermit = { readonly kind: "counted" | "probe" | "panic" };

const permits = {
  counted: { kind: "counted" },
  probe: { kind: "probe" },
  panic: { kind: "panic" },
} as const satisfies Record<BreakerPermit["kind"], BreakerPermit>;

/** The window is kept as this many buckets: outcomes age out a bucket at a time, in constant memory. */
const bucketCount = 10;

/**
 * One endpoint's circuit breaker. It judges the endpoint by the requests it failed, not by attempts: a
 * request whose failed attempt a retry on the same endpoint then served was served, and says the endpoint
 * works. Closed: every attempt goes through; at least `breakerRequestsMin` requests over the last
 * `breakerWindowMs` of which `breakerFailureRateMin` failed there open it. Open: no attempt for
 * `breakerOpenMs`, except a request's panic attempt when every endpoint it could use is open. Half-open:
 * up to `breakerHalfOpenProbesMax` attempts at a time probe it. A probe's or panic attempt's success closes
 * it (with a clean window); a failed probe opens it again.
 */
export class CircuitBreaker {
  private stateValue: BreakerState = "closed";
  private openedAtMs = 0;
  private probesInFlight = 0;
  /** When an attempt here last failed by the endpoint's fault: a panic attempt goes to the least recent. */
  private lastFailureAtMs = Number.NEGATIVE_INFINITY;
  private readonly requests = new Array<number>(bucketCount).fill(0);
  private readonly failures = new Array<number>(bucketCount).fill(0);
  /** The bucket `requests[index]` covers, by its number since the epoch; older ones are stale. */
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

  /** Whether an ordinary attempt may go now (no side effect: `acquire` takes the probe slot). */
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

  /** Milliseconds until an ordinary attempt may go here again (0: now); the `Retry-After` of a refusal. */
  reopensInMs(nowMs: number): number {
    if (this.allows(nowMs)) return 0;
    if (this.stateValue === "open") return this.openedAtMs + this.limits.breakerOpenMs - nowMs;
    return 0;
  }

  get lastFailedAtMs(): number {
    return this.lastFailureAtMs;
  }

  /**
   * Called when an attempt starts; the permit goes back to `recordAttempt`. `panic`: the caller found every
   * endpoint it could use refusing, and makes this one attempt anyway (an open breaker never answers).
   */
  acquire(nowMs: number, panic = false): BreakerPermit {
    if (!this.allows(nowMs)) {
      if (!panic) throw new Error("an attempt went to an endpoint whose breaker refuses it");
      return permits.panic;
    }
    if (this.stateValue !== "half-open") return permits.counted;
    this.probesInFlight += 1;
    return permits.probe;
  }

  /**
   * The outcome of one attempt; `failed: undefined` is one that says nothing of the endpoint (cancelled by
   * its caller, or ended by no upstream failure). Only probes and panic attempts move the state here; a
   * closed breaker waits for the request's outcome (`recordRequest`).
   */
  recordAttempt(permit: BreakerPermit, failed: boolean | undefined, nowMs: number): void {
    if (permit.kind === "probe") this.probesInFlight -= 1;
    if (failed === undefined) return;
    if (failed) this.lastFailureAtMs = nowMs;
    if (permit.kind === "counted" || this.stateValue === "closed") return;
    if (!failed) this.close();
    // A failed panic attempt at an open endpoint is what its breaker expected: the open period stands.
    else if (permit.kind === "probe" || this.stateValue === "half-open") this.open(nowMs);
  }

  /** What one request's attempts here came to: served here, or failed here by the endpoint's fault. */
  recordRequest(failed: boolean, nowMs: number): void {
    if (this.stateValue !== "closed") return;
    const index = this.bucketIndex(nowMs);
    this.requests[index]! += 1;
    if (failed) this.failures[index]! += 1;
    const { requests, failures } = this.windowCounts(nowMs);
    if (
      requests >= this.limits.breakerRequestsMin &&
      failures / requests >= this.limits.breakerFailureRateMin
    )
      this.open(nowMs);
  }

  /** Requests and failed requests counted in the current window (closed state only; cleared on closing). */
  windowCounts(nowMs: number): { requests: number; failures: number } {
    const current = this.bucketNumberOf(nowMs);
    let requests = 0;
    let failures = 0;
    for (let index = 0; index < bucketCount; index += 1) {
      if (current - this.bucketNumbers[index]! >= bucketCount) continue;
      requests += this.requests[index]!;
      failures += this.failures[index]!;
    }
    return { requests, failures };
  }

  private open(nowMs: number): void {
    this.openedAtMs = nowMs;
    this.clearWindow();
    this.transition("open");
  }

  private close(): void {
    this.clearWindow();
    this.transition("closed");
  }

  private transition(to: BreakerState): void {
    if (this.stateValue === to) return;
    this.stateValue = to;
    this.onTransition(to);
  }

  private clearWindow(): void {
    this.requests.fill(0);
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
      this.requests[index] = 0;
      this.failures[index] = 0;
    }
    return index;
  }
}
