import pino from "pino";
import { describe, expect, it } from "vitest";
import { throttledLog } from "../../src/kernel/throttled-log";

/**
 * Work failing on every poll through an outage: its first failure is logged, then at most one a period
 * with how many were left out, and once it works again one line says so — not a line a second.
 */

function capturingLogger(): {
  logger: pino.Logger;
  lines: { level: number; msg: string; [key: string]: unknown }[];
} {
  const lines: { level: number; msg: string }[] = [];
  const logger = pino({ level: "info" }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { logger, lines };
}

describe("a throttled log", () => {
  it("logs the first failure, one a period after, and its recovery once", () => {
    const { logger, lines } = capturingLogger();
    let nowMs = 0;
    const log = throttledLog(logger, 60_000, () => nowMs);

    log.recovered("works again"); // never failed: nothing to say
    for (; nowMs < 120_000; nowMs += 1_000) log.error({ attempt: nowMs }, "pass failed");
    log.recovered("works again");
    log.recovered("works again");
    nowMs += 1_000;
    log.error({}, "pass failed");

    expect(
      lines.map(({ level, msg, suppressedSinceLast, failures }) => ({
        level,
        msg,
        suppressedSinceLast,
        failures,
      })),
    ).toEqual([
      { level: 50, msg: "pass failed", suppressedSinceLast: 0, failures: undefined },
      { level: 50, msg: "pass failed", suppressedSinceLast: 59, failures: undefined },
      { level: 30, msg: "works again", suppressedSinceLast: undefined, failures: 120 },
      // A new outage is logged at once.
      { level: 50, msg: "pass failed", suppressedSinceLast: 0, failures: undefined },
    ]);
  });
});

describe("a throttled log's warnings", () => {
  it("are throttled with its errors, at warn level", () => {
    const { logger, lines } = capturingLogger();
    let nowMs = 0;
    const log = throttledLog(logger, 60_000, () => nowMs);

    for (; nowMs < 61_000; nowMs += 1_000) log.warn({}, "retrying");
    log.error({}, "failed");

    expect(lines.map(({ level, msg, suppressedSinceLast }) => ({ level, msg, suppressedSinceLast }))).toEqual(
      [
        { level: 40, msg: "retrying", suppressedSinceLast: 0 },
        { level: 40, msg: "retrying", suppressedSinceLast: 59 },
      ],
    );
  });
});
