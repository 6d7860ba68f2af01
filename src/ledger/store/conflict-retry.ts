import { setTimeout as sleep } from "node:timers/promises";
import { KeyedTurns } from "../../kernel/keyed-turns";
import { limits } from "../../kernel/limits";
import { WrongExpectedVersionError } from "./event-store";

export interface ConflictRetryLimits {
  attemptsMax: number;
  backoffBaseMs: number;
  backoffMaxMs: number;
}

const defaultLimits: ConflictRetryLimits = {
  attemptsMax: limits.commandConflictAttemptsMax,
  backoffBaseMs: limits.commandConflictBackoffBaseMs,
  backoffMaxMs: limits.commandConflictBackoffMaxMs,
};

/**
 * Commands decided on a stream's state and appended at the version they read (optimistic concurrency):
 * `decideAndAppend` runs one, and when another writer appended first (`WrongExpectedVersionError`) runs it
 * again — it reads the stream afresh, so it decides on the new state — after a jittered, doubling backoff,
 * up to `attemptsMax` attempts; the last conflict is thrown. Commands of one stream take turns within the
 * process, so a burst on one key or organization never conflicts with itself; only other processes' writes
 * can, and the backoff spreads those out.
 */
export class StreamCommands {
  private readonly turns = new KeyedTurns();

  constructor(
    private readonly retryLimits: ConflictRetryLimits = defaultLimits,
    private readonly random: () => number = Math.random,
  ) {}

  decideAndAppend<T>(streamId: string, attempt: () => Promise<T>): Promise<T> {
    return this.turns.run(streamId, () => retryingConflicts(attempt, this.retryLimits, this.random));
  }
}

/** `attempt` until it appends without a conflict, as `StreamCommands` says, without taking turns. */
export async function retryingConflicts<T>(
  attempt: () => Promise<T>,
  retryLimits: ConflictRetryLimits = defaultLimits,
  random: () => number = Math.random,
): Promise<T> {
  for (let made = 1; ; made++) {
    try {
      return await attempt();
    } catch (error) {
      if (!(error instanceof WrongExpectedVersionError) || made >= retryLimits.attemptsMax) throw error;
      const stepMs = Math.min(retryLimits.backoffMaxMs, retryLimits.backoffBaseMs * 2 ** (made - 1));
      await sleep(Math.round(stepMs / 2 + (random() * stepMs) / 2));
    }
  }
}
