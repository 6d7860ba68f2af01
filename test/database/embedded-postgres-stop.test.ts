import { spawn } from "node:child_process";
import { once } from "node:events";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { databaseSessionLimits } from "../../src/kernel/limits";

/**
 * Embedded PostgreSQL, once stopped, keeps nothing of its process alive: a test run or a tool without
 * DATABASE_URL ends when its work does, not when the stop's bound (`embeddedStopTimeoutMs`) would have run
 * out.
 */

let scratch: string;

beforeAll(async () => {
  scratch = await mkdtemp(path.join(tmpdir(), "embedded-stop-"));
  // Run as root, the server runs as another user, who must reach the cluster's directory.
  await chmod(scratch, 0o755);
});

afterAll(async () => {
  await rm(scratch, { recursive: true, force: true });
});

describe("stopping embedded PostgreSQL", () => {
  it("given a process that started and stopped it, then the process ends on its own once the server has", async () => {
    const moduleUrl = pathToFileURL(path.resolve("src/database/embedded-postgres.ts")).href;
    const dataDirectory = path.join(scratch, "cluster");
    const script = `
      import { startEmbeddedPostgres } from ${JSON.stringify(moduleUrl)};
      const server = await startEmbeddedPostgres({ dataDirectory: ${JSON.stringify(dataDirectory)}, port: 0 });
      await server.stop();
      console.log("stopped");`;
    const child = spawn(
      process.execPath,
      [
        "--import",
        pathToFileURL(path.resolve("node_modules/tsx/dist/loader.mjs")).href,
        "--input-type=module",
        "--eval",
        script,
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    const exited = once(child, "exit");
    let stoppedAtMs: number | undefined;
    child.stdout.on("data", (chunk: Buffer) => {
      if (chunk.toString("utf8").includes("stopped")) stoppedAtMs ??= Date.now();
    });

    const [code] = (await exited) as [number | null];

    expect(code).toBe(0);
    expect(stoppedAtMs).toBeDefined();
    // Well inside the bound: a process held by it would end only once it ran out.
    expect(Date.now() - stoppedAtMs!).toBeLessThan(databaseSessionLimits.embeddedStopTimeoutMs / 3);
  }, 120_000);
});
