import pino, { type Logger } from "pino";
import { limits } from "./kernel/limits";

/**
 * One logger for the process: JSON lines, or readable lines through pino-pretty when stdout is a terminal
 * (a person is reading, not a log shipper). Credentials are redacted wherever they might appear.
 *
 * JSON lines are buffered and written a block at a time: every request writes an access-log line, and a
 * write system call per line cost the gateway about 2% of its CPU under load. pino flushes the buffer
 * synchronously when the process exits; a line logged within `limits.logFlushIntervalMs` of a SIGKILL may
 * be lost: the ledger, not the log, is the record of what happened.
 */
export function createLogger(level: string, pretty: boolean = process.stdout.isTTY === true): Logger {
  const options = {
    level,
    base: { service: "won-gateway" },
    redact: {
      paths: [
        "authorization",
        "*.authorization",
        "*.headers.authorization",
        "*.headers.cookie",
        "*.headers['x-api-key']",
        "*.headers['x-goog-api-key']",
        "key",
        "apiKey",
        "*.apiKey",
        "token",
        "adminToken",
      ],
      censor: "[redacted]",
    },
  } satisfies pino.LoggerOptions;
  if (pretty)
    return pino({
      ...options,
      transport: { target: "pino-pretty", options: { colorize: true, translateTime: "SYS:HH:MM:ss.l" } },
    });
  return pino(
    options,
    pino.destination({
      dest: 1,
      sync: false,
      minLength: limits.logWriteBytesMin,
      periodicFlush: limits.logFlushIntervalMs,
    }),
  );
}

export type { Logger };
