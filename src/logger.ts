import pino, { type Logger } from "pino";

/**
 * One logger for the process: JSON lines, or readable lines through pino-pretty when stdout is a terminal
 * (a person is reading, not a log shipper). Credentials are redacted wherever they might appear.
 *
 * JSON lines go out asynchronously: a synchronous write of each access-log line to a pipe blocked the event
 * loop for about 0.5 ms per request in a profile of the gateway (its reader woke and took the core), and
 * lines written while one write is in flight leave together. What is still buffered is written out
 * synchronously when the process exits, so the last lines (`stopped`) are never lost.
 */
export function createLogger(level: string, pretty: boolean = process.stdout.isTTY === true): Logger {
  const destination = pretty ? undefined : pino.destination({ dest: 1, sync: false });
  if (destination)
    process.once("exit", () => {
      try {
        destination.flushSync();
      } catch {
        // stdout is gone (its reader closed the pipe): there is no one left to read the lines.
      }
    });
  const options: pino.LoggerOptions = {
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
  };
  return destination ? pino(options, destination) : pino(options);
}

export type { Logger };
