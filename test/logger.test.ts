import { spawn } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";

/**
 * The process logger writes JSON lines a block at a time (src/logger.ts): a lone line still reaches stdout
 * within the flush interval while the process runs, and every line logged before an exit is written.
 */

const repository = path.resolve(import.meta.dirname, "..");

/** Runs `script` (TypeScript, with createLogger in scope) in a child process; its stdout lines as they came. */
function runScript(
  script: string,
): Promise<{ lines: { atMs: number; text: string }[]; startedAtMs: number }> {
  const startedAtMs = Date.now();
  const child = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      "--input-type=module",
      "-e",
      `import { createLogger } from "./src/logger.ts";\n${script}`,
    ],
    { cwd: repository, stdio: ["ignore", "pipe", "inherit"] },
  );
  const lines: { atMs: number; text: string }[] = [];
  let pending = "";
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => {
    pending += chunk;
    const complete = pending.split("\n");
    pending = complete.pop()!;
    for (const text of complete) lines.push({ atMs: Date.now(), text });
  });
  return new Promise((resolve, reject) => {
    child.once("error", reject);
    child.once("close", () => resolve({ lines, startedAtMs }));
  });
}

describe("the process logger", () => {
  it("writes a lone line within the flush interval, without waiting for a block to fill", async () => {
    const { lines } = await runScript(`
      const logger = createLogger("info", false);
      const loggedAtMs = Date.now();
      logger.info("lone line");
      // Stay alive well past the flush interval, then say when the line was logged.
      setTimeout(() => console.log(JSON.stringify({ loggedAtMs })), 1_500);
    `);
    const lone = lines.find((line) => line.text.includes('"lone line"'));
    const { loggedAtMs } = JSON.parse(lines.at(-1)!.text) as { loggedAtMs: number };
    expect(lone).toBeDefined();
    // Written by the periodic flush (200 ms), not at exit 1.5 s later; generous for a loaded machine.
    expect(lone!.atMs - loggedAtMs).toBeLessThan(1_000);
  });

  it("writes every line logged before process.exit", async () => {
    const { lines } = await runScript(`
      const logger = createLogger("info", false);
      for (let index = 0; index < 1_000; index++) logger.info({ index }, "line before exit");
      process.exit(0);
    `);
    const logged = lines.filter((line) => line.text.includes('"line before exit"'));
    expect(logged).toHaveLength(1_000);
    expect(JSON.parse(logged.at(-1)!.text)).toMatchObject({ index: 999, service: "won-gateway" });
  });
});
