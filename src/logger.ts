import pino, { type Logger } from "pino";

/** One JSON logger for the process. Credentials are redacted wherever they might appear. */
export function createLogger(level: string): Logger {
  return pino({
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
