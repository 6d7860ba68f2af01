import { execFile } from "node:child_process";
import { once } from "node:events";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import type { AddressInfo } from "node:net";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { spawnService } from "./support/service-process";

/**
 * `npm start` in a fresh checkout, without DATABASE_URL, as a newcomer runs it: a first start that fails
 * (its port taken) leaves no embedded PostgreSQL running, and the next start is still the first one the
 * README describes — it prints the demo key, whose account holds ₩10,000 — and stops its database when it stops.
 */

// One process, as `npm start` runs it (node --import tsx): a killed test leaves no child of a tsx wrapper.
const node = process.execPath;
const mainArgs = [
  "--import",
  pathToFileURL(path.resolve("node_modules/tsx/dist/loader.mjs")).href,
  path.resolve("src/main.ts"),
];
let checkout: string;
let taken: Server;
let takenPort: number;

/** The process's environment: nothing of the test run's databases, secrets or ports. */
function newcomerEnvironment(port: number): NodeJS.ProcessEnv {
  const { DATABASE_URL: _database, REDIS_URL: _redis, ...rest } = process.env;
  return { ...rest, PORT: String(port), HOST: "127.0.0.1", LOG_LEVEL: "info" };
}

/** Pids of PostgreSQL servers running on this checkout's embedded cluster. */
async function embeddedPostgresPids(): Promise<string[]> {
  const found = await promisify(execFile)("pgrep", ["-f", `${checkout}/.data/postgres`]).catch(
    (error: { code?: number }) => {
      if (error.code === 1) return { stdout: "" };
      throw error;
    },
  );
  return found.stdout.split("\n").filter((pid) => pid !== "");
}

beforeAll(async () => {
  checkout = await mkdtemp(path.join(tmpdir(), "first-start-"));
  // As a checkout is: readable by others (run as root, embedded PostgreSQL runs as another user).
  await chmod(checkout, 0o755);
  taken = createServer();
  await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
  takenPort = (taken.address() as AddressInfo).port;
});

afterAll(async () => {
  for (const pid of await embeddedPostgresPids()) process.kill(Number(pid), "SIGKILL");
  await new Promise((resolve) => taken.close(resolve));
  await rm(checkout, { recursive: true, force: true });
});

describe("the first start in a fresh checkout, without DATABASE_URL", () => {
  it("given first starts that failed (configuration, a taken port), then no database is left running, and the next start seeds the demo and prints its key", async () => {
    // Given: a first start stopped by its configuration once the database was up (an upstream's key without
    // its base URL), and then one whose port is taken
    const misconfigured = await spawnService(
      node,
      mainArgs,
      { ...newcomerEnvironment(takenPort), ALPHA_API_KEY: "sk-test" },
      { readyLine: "ALPHA_BASE_URL", cwd: checkout },
    );
    if (misconfigured.child.exitCode === null) await once(misconfigured.child, "exit");
    expect(misconfigured.child.exitCode).toBe(2);
    expect(await embeddedPostgresPids()).toEqual([]);
    const failed = await spawnService(node, mainArgs, newcomerEnvironment(takenPort), {
      readyLine: "is in use",
      cwd: checkout,
    });
    if (failed.child.exitCode === null) await once(failed.child, "exit");
    expect(failed.child.exitCode).toBe(2);
    expect(await embeddedPostgresPids()).toEqual([]);

    // When: started again on a free port
    const started = await spawnService(node, mainArgs, newcomerEnvironment(0), {
      readyLine: "curl http",
      cwd: checkout,
    });
    try {
      // Then: the banner of the first start, with a demo key that works on ₩10,000
      const banner = started.output();
      const baseUrl = /base URL\s+(\S+)/.exec(banner)?.[1];
      const apiKey = /demo API key\s+(\S+)/.exec(banner)?.[1];
      const sessionToken = /session token\s+(\S+)/.exec(banner)?.[1];
      expect(baseUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/llm\/v1$/);
      expect(apiKey).toMatch(/^svc_/);
      const origin = new URL(baseUrl!).origin;
      const balance = await fetch(`${origin}/llm/balance`, {
        headers: { authorization: `Bearer ${sessionToken}` },
      });
      expect(((await balance.json()) as { user: { balanceWon: string } }).user.balanceWon).toBe("10000");
      const models = await fetch(`${baseUrl}/models`, { headers: { authorization: `Bearer ${apiKey}` } });
      expect(models.status).toBe(200);
    } finally {
      const exited = once(started.child, "exit");
      started.child.kill("SIGTERM");
      const [stopCode] = (await exited) as [number];
      expect(stopCode).toBe(0);
    }
    // And: stopping stopped the embedded database too
    expect(await embeddedPostgresPids()).toEqual([]);
  }, 180_000);
});
