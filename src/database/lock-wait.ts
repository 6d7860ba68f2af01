import { assert } from "../kernel/assert";

/**
 * A statement that moves rows another transaction may keep (an account's funds row, held by an operator's
 * `SELECT … FOR UPDATE` left open) waits for them only so long: `lock_timeout`, set in the statement for its
 * own transaction, gives it up with SQLSTATE 55P03, and it wrote nothing.
 */

/** PostgreSQL's SQLSTATE for a lock not granted within `lock_timeout`. */
export const lockNotAvailable = "55P03";

export function isLockNotAvailable(error: unknown): boolean {
  return (
    typeof error === "object" && error !== null && (error as { code?: unknown }).code === lockNotAvailable
  );
}

/** `lock_timeout`'s value for a wait of `lockWaitMs` (whole milliseconds; 0 would mean no bound at all). */
export function lockTimeoutSettingOf(lockWaitMs: number): string {
  const setting = Math.round(lockWaitMs);
  assert(setting >= 1, `a lock wait of ${lockWaitMs} ms is no bound`);
  return String(setting);
}

/**
 * A statement waited past its bound for a row another transaction holds, and wrote nothing: which row, the
 * database does not say.
 */
export class RowsLockedError extends Error {
  override readonly name = "RowsLockedError";
}
