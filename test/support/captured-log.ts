import { Writable } from "node:stream";
import pino, { type Logger } from "pino";

/** A logger at `info` whose JSON lines the test reads back, as a log collector would receive them. */
export function capturedLog<Line>(): { logger: Logger; lines: Line[] } {
  const lines: Line[] = [];
  const logger = pino(
    { level: "info" },
    new Writable({
      write(chunk, _encoding, done) {
        lines.push(JSON.parse(String(chunk)) as Line);
        done();
      },
    }),
  );
  return { logger, lines };
}
