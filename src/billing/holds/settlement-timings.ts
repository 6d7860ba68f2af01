import { assert } from "../../kernel/assert";

/**
 * Every bound on which "what was delivered is billed" (C10) depends, named with its unit; the defaults are
 * `defaultSettlementTimings` in src/kernel/limits.ts, with every other limit. The gateway and the worker read
 * the same values (the orphan sweep judges the gateways by them), so an operator who changes one through the
 * environment changes it for every role. The relations between them are asserted at start: a deployment
 * whose timings contradict each other would bill wrongly, quietly.
 */
export interface SettlementTimings {
  /** A gateway process writes its heartbeat this often. */
  heartbeatIntervalMs: number;
  /**
   * A gateway whose heartbeat the sweeper has watched stay unchanged this long is presumed dead and its
   * holds settled from what they recorded. The sweeper must itself have been reading the heartbeats for
   * the whole window (a database outage stops both its reads and the beats: it proves nothing).
   */
  presumedDeadAfterMs: number;
  /** How often the leading worker looks for orphaned holds. */
  orphanSweepIntervalMs: number;
  /**
   * Two reads of the heartbeats further apart than this do not make one unbroken watch (the sweeper was
   * paused, or its reads failed in between): it starts watching anew.
   */
  observationGapMaxMs: number;
  /**
   * A hold is good for this long from its placement or its last renewal; a hold not renewed in time (its
   * request no longer runs in a living process: a leak) is settled by the sweep.
   */
  holdLifetimeMs: number;
  /**
   * Each gateway process, in one statement for all its requests in flight, renews their holds and records
   * each stream's output so far this often: a crash bills what was delivered up to the last record.
   */
  progressIntervalMs: number;
  /** A stream still running this long after its request started is ended by the gateway (an error event). */
  streamDeadlineMs: number;
  /** At stop, requests in flight get this long to finish; streams still running then are cut (an error event). */
  shutdownDrainMs: number;
  /**
   * A complete answer's last bytes wait for its usage to be durable at most this long. Past it (the ledger
   * away) the answer leaves anyway: the durable hold witnesses it, and the usage is still being written.
   */
  usageDurableWaitMs: number;
}

/** Throws (at start) when the timings cannot keep C10's promises together. */
export function assertSettlementTimings(timings: SettlementTimings): SettlementTimings {
  for (const [name, value] of Object.entries(timings))
    assert(
      Number.isInteger(value) && value > 0,
      `${name} must be a positive whole number of ms, not ${value}`,
    );
  const {
    heartbeatIntervalMs,
    presumedDeadAfterMs,
    orphanSweepIntervalMs,
    observationGapMaxMs,
    holdLifetimeMs,
    progressIntervalMs,
  } = timings;
  // A living gateway misses two beats in a row before the sweeper may call it dead.
  assert(
    heartbeatIntervalMs * 3 <= presumedDeadAfterMs,
    "heartbeatIntervalMs × 3 must be ≤ presumedDeadAfterMs",
  );
  // Every sweep keeps the watch unbroken; a gap long enough to hide a dead gateway's last beat breaks it.
  assert(orphanSweepIntervalMs < observationGapMaxMs, "orphanSweepIntervalMs must be < observationGapMaxMs");
  assert(observationGapMaxMs < presumedDeadAfterMs, "observationGapMaxMs must be < presumedDeadAfterMs");
  // A running request's hold is renewed at least twice before it could expire.
  assert(progressIntervalMs * 3 <= holdLifetimeMs, "progressIntervalMs × 3 must be ≤ holdLifetimeMs");
  // A crash loses at most the output of one progress interval, which must be shorter than the wait to settle.
  assert(progressIntervalMs <= presumedDeadAfterMs, "progressIntervalMs must be ≤ presumedDeadAfterMs");
  // A healthy gateway's holds are confirmed (every progress interval) long before their confirmation ages
  // out, so its output never waits for one.
  assert(
    holdConfirmationMaxAgeMs(timings) >= progressIntervalMs * 2,
    "heartbeatIntervalMs + progressIntervalMs × 3 must be ≤ presumedDeadAfterMs",
  );
  return timings;
}

/**
 * The least `holdLifetimeMs` and `presumedDeadAfterMs` the other timings allow: the relations above solved for
 * the two the environment sets, so that config.ts refuses a value by its variable and its bound.
 */
export function settableTimingsMinMs(
  timings: SettlementTimings,
): Pick<SettlementTimings, "holdLifetimeMs" | "presumedDeadAfterMs"> {
  const { heartbeatIntervalMs, observationGapMaxMs, progressIntervalMs } = timings;
  return {
    holdLifetimeMs: progressIntervalMs * 3,
    presumedDeadAfterMs: Math.max(
      heartbeatIntervalMs * 3,
      observationGapMaxMs + 1,
      progressIntervalMs,
      // holdConfirmationMaxAgeMs ≥ progressIntervalMs × 2
      heartbeatIntervalMs + progressIntervalMs * 3,
    ),
  };
}

/**
 * How long a gateway's output may flow on its hold's last confirmation (placed, or found open by a progress
 * record): the sweep releases a hold only once the gateway's heartbeat, at most one beat older than that
 * confirmation, has stood still for `presumedDeadAfterMs`; one progress interval more is the margin for the
 * statement's own time and the output being written when the age is checked.
 */
export function holdConfirmationMaxAgeMs(timings: SettlementTimings): number {
  return timings.presumedDeadAfterMs - timings.heartbeatIntervalMs - timings.progressIntervalMs;
}
