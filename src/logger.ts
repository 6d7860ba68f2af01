import pino, { type Logger } from "pino";

/**
 * One logger for the process: JSON lines, or readable lines through pino-pretty when stdout is a terminal
 * (a person is reading, not a log shipper). Credentials are redacted wherever they might appear.
 */
export function createLogger(level: string, pretty: boolean = process.stdout.isTTY === true): Logger {
  return pino({
    ...(pretty
      ? { transport: { target: "pino-pretty", options: { colorize: true, translateTime: "SYS:HH:MM:ss.l" } } }
      : {}),
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
  });
}

export type { Logger };
