import { ProjectionLagError } from "./projection-waiter";

/**
 * A change the ledger recorded whose reading back failed: the database went away after the commit, say.
 * Answered as a change recorded but not visible yet — never as "unavailable" or an internal error, which
 * would invite sending it again and recording it twice (a top-up credited twice).
 */
export class RecordedNotVisibleError extends Error {
  override readonly name = "RecordedNotVisibleError";
  constructor(cause: unknown) {
    super("the change was recorded, but reading it back failed", { cause });
  }
}

/**
 * What a command does once its append is committed — waiting for its projections, reading the answer
 * back: any failure there is a `RecordedNotVisibleError` (or the projections' own lag), since the change
 * stands whatever failed after it.
 */
export async function readBackRecorded<T>(readBack: () => Promise<T>): Promise<T> {
  try {
    return await readBack();
  } catch (error) {
    if (error instanceof ProjectionLagError) throw error;
    throw new RecordedNotVisibleError(error);
  }
}

/**
 * The read back of a change whose answer carries a secret shown only there (a new key's value, a webhook
 * endpoint's signing secret): waited for as any other, but a failure once the change is recorded still lets
 * the answer go out. A 503 there left a key or an endpoint whose secret nobody could ever read; what lags
 * catches up on its own, and readiness and the lag metrics say it is behind meanwhile.
 */
export async function readBackAnsweringSecret(readBack: () => Promise<void>): Promise<void> {
  await readBack().catch(() => {});
}
