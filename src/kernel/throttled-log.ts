import type { Logger } from "pino";

/**
 * A queue whose store is away reports an error on every reconnect attempt. Logging each would flood the
 * log; logging none would hide the outage. This logs the first, then at most one per interval with the
 * number suppressed in between, and once the work succeeds again, one line saying so.
 */
export interface ThrottledLog {
  error(details: Record<string, unknown>, message: string): void;
  /** As `error`, at warn level: a failure retried, which the same throttle counts. */
  warn(details: Record<string, unknown>, message: string): void;
  /** The work succeeded: after errors, one info line (`message`, with how many failed); else nothing. */
  recovered(message: string): void;
}

export function throttledLog(logger: Logger, intervalMs: number, now: () => number = Date.now): ThrottledLog {
  let lastLoggedAtMs: number | undefined;
  let suppressed = 0;
  let failuresSinceRecovery = 0;
  const failed = (level: "error" | "warn", details: Record<string, unknown>, message: string) => {
    failuresSinceRecovery += 1;
    const current = now();
    if (lastLoggedAtMs !== undefined && current - lastLoggedAtMs < intervalMs) {
      suppressed += 1;
      return;
    }
    logger[level]({ ...details, suppressedSinceLast: suppressed }, message);
    lastLoggedAtMs = current;
    suppressed = 0;
  };
  return {
    error: (details, message) => failed("error", details, message),
    warn: (details, message) => failed("warn", details, message),
    recovered(message) {
      if (failuresSinceRecovery === 0) return;
      logger.info({ failures: failuresSinceRecovery }, message);
      failuresSinceRecovery = 0;
      lastLoggedAtMs = undefined;
      suppressed = 0;
    },
  };
}

/** Errors as a log line's `err` without anything but name and message (no stack, no connection string). */
export function errorSummaryOf(error: unknown): { name: string; message: string } {
  if (error instanceof Error) return { name: error.name, message: error.message };
  return { name: "unknown", message: String(error) };
}
