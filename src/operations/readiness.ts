import { isDatabaseUnavailable } from "../gateway/middleware/error-handler";
import {
  DatabaseReadOnlyError,
  type DependencyProbes,
  ProbeTimeoutError,
  ProjectionsNotPreparedError,
  within,
} from "./dependency-probes";

/**
 * C11 readiness: ready when PostgreSQL, the charge queue and the projections (lag at most a named bound)
 * are usable and the process is not draining. `startDraining()` is the shutdown's first move: from then on
 * every check answers not ready, so a load balancer stops sending before connections close.
 */

export type CheckName = "postgresql" | "queue" | "projections" | "process";

export interface CheckResult {
  status: "ok" | "failing";
  /** Why it fails, in words safe to show anyone (no address, credential or stack). */
  reason?: string;
  [detail: string]: unknown;
}

export interface ReadinessReport {
  status: "ready" | "not ready";
  /** The checks that failed, in a fixed order; empty when ready. */
  failing: CheckName[];
  checks: Record<CheckName, CheckResult>;
}

export interface ReadinessBounds {
  /** Each dependency check gives up after this long. */
  probeTimeoutMs: number;
  /** The projections are usable while the oldest unapplied event is at most this old. */
  projectionLagSecondsMax: number;
}

export class Readiness {
  private draining = false;
  private probes: DependencyProbes | undefined;

  constructor(private readonly bounds: ReadinessBounds) {}

  /** Hands over the probes once the service's ledger is open; until then the process is "starting". */
  attach(probes: DependencyProbes): void {
    this.probes = probes;
  }

  /** From now on readiness answers 503 (shutdown, C11). Idempotent. */
  startDraining(): void {
    this.draining = true;
  }

  get isDraining(): boolean {
    return this.draining;
  }

  async check(): Promise<ReadinessReport> {
    const probes = this.probes;
    const notAttached = (): CheckResult => ({ status: "failing", reason: "starting" });
    const [postgresql, queue, projections] = probes
      ? await Promise.all([
          this.run(
            () => probes.postgresql(),
            () => ({}),
          ),
          this.run(
            () => probes.queueDepth(),
            (depth) => ({ depth }),
          ),
          this.run(
            () => probes.projectionLagSeconds(),
            (lagSeconds) => ({ lagSeconds, lagSecondsMax: this.bounds.projectionLagSecondsMax }),
            (lagSeconds) =>
              lagSeconds > this.bounds.projectionLagSecondsMax
                ? `lag ${lagSeconds.toFixed(1)} s above ${this.bounds.projectionLagSecondsMax} s`
                : undefined,
          ),
        ])
      : [notAttached(), notAttached(), notAttached()];
    const process: CheckResult = this.draining ? { status: "failing", reason: "draining" } : { status: "ok" };
    const checks: Record<CheckName, CheckResult> = { postgresql, queue, projections, process };
    const failing = (Object.keys(checks) as CheckName[]).filter((name) => checks[name].status !== "ok");
    return { status: failing.length === 0 ? "ready" : "not ready", failing, checks };
  }

  private async run<T>(
    probe: () => Promise<T>,
    details: (value: T) => Record<string, unknown>,
    refuse: (value: T) => string | undefined = () => undefined,
  ): Promise<CheckResult> {
    try {
      const value = await within(probe(), this.bounds.probeTimeoutMs);
      const reason = refuse(value);
      return reason ? { status: "failing", reason, ...details(value) } : { status: "ok", ...details(value) };
    } catch (error) {
      return { status: "failing", reason: reasonOf(error) };
    }
  }
}

function reasonOf(error: unknown): string {
  if (error instanceof ProbeTimeoutError) return "timed out";
  if (error instanceof ProjectionsNotPreparedError) return "projections not prepared";
  if (error instanceof DatabaseReadOnlyError) return "read-only";
  if (isDatabaseUnavailable(error)) return "unreachable";
  return "unavailable";
}
