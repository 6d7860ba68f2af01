import { spawn } from "node:child_process";
import { type AddressInfo, createServer } from "node:net";
import { describe, expect, it, vi } from "vitest";
import { serviceEntryArgs } from "./support/built-entries";
import { createTestDatabase } from "./support/database";
import { removeDeploymentQueueData } from "./workers/queue-test-support";

/** The composition root refuses a role it cannot serve, with one line naming the problem (C2). */

async function startMain(
  args: string[],
  extraEnvironment: Record<string, string> = {},
): Promise<{ code: number | null; stderr: string }> {
  const environment: NodeJS.ProcessEnv = { ...process.env };
  delete environment.DATABASE_URL;
  Object.assign(environment, extraEnvironment);
  const child = spawn(process.execPath, [...serviceEntryArgs, ...args], {
    env: environment,
    stdio: ["ignore", "ignore", "pipe"],
  });
  let stderr = "";
  child.stderr.on("data", (chunk) => {
    stderr += String(chunk);
  });
  const code = await new Promise<number | null>((resolve) => child.once("exit", resolve));
  return { code, stderr };
}

describe("process roles", () => {
  it.each(["gateway", "worker"])("refuses --role=%s without a shared DATABASE_URL", async (role) => {
    const { code, stderr } = await startMain([`--role=${role}`]);
    expect(code).toBe(2);
    expect(stderr.trim()).toBe(`invalid configuration: DATABASE_URL is required with --role=${role}`);
  });

  it("given DATABASE_URL without SESSION_SECRET and KEY_PEPPER, then one line names both and how to make one", async () => {
    // Empty is unset: the two secrets are missing whatever the test's own environment holds.
    const { code, stderr } = await startMain([], {
      DATABASE_URL: "postgres://postgres@127.0.0.1:1/nothing",
      SESSION_SECRET: "",
      KEY_PEPPER: "",
    });
    expect(code).toBe(2);
    expect(stderr.trim()).toBe(
      "invalid configuration: SESSION_SECRET and KEY_PEPPER are required when DATABASE_URL is set (32+ characters each; openssl rand -hex 32 makes one)",
    );
  });

  it("refuses a models file it cannot read, naming it", async () => {
    const { code, stderr } = await startMain([], { MODELS_FILE: "/nonexistent/models.yaml" });
    expect(code).toBe(2);
    expect(stderr.trim()).toBe(
      "invalid configuration: MODELS_FILE /nonexistent/models.yaml cannot be read (ENOENT)",
    );
  });

  it.each(["gateway", "worker"])(
    "says in one line that --role=%s cannot reach PostgreSQL, and exits 1",
    async (role) => {
      const { code, stderr } = await startMain([`--role=${role}`], {
        DATABASE_URL: "postgres://postgres@127.0.0.1:1/nothing",
        SESSION_SECRET: "roles-session-secret-0123456789abcdef0123456789",
        KEY_PEPPER: "roles-key-pepper-0123456789abcdef0123456789abcd",
      });
      expect(code).toBe(1);
      expect(stderr.trim()).toMatch(/^won-gateway failed to start: connect ECONNREFUSED 127\.0\.0\.1:1$/);
    },
    60_000,
  );

  it("says in one line that PostgreSQL accepted the connection and never answered, and exits 1", async () => {
    // A database host that takes the connection and says nothing (a hung server, a black-holing proxy).
    const silent = createServer(() => {});
    await new Promise<void>((resolve) => silent.listen(0, "127.0.0.1", resolve));
    try {
      const { port } = silent.address() as AddressInfo;
      const { code, stderr } = await startMain(["--role=worker"], {
        DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/nothing`,
        SESSION_SECRET: "roles-session-secret-0123456789abcdef0123456789",
        KEY_PEPPER: "roles-key-pepper-0123456789abcdef0123456789abcd",
      });
      expect(code).toBe(1);
      expect(stderr.trim()).toMatch(/^won-gateway failed to start: [^\n]*timeout[^\n]*$/);
    } finally {
      silent.close();
    }
  }, 90_000);

  it("given a gateway waiting for a worker to prepare the projections, when it is told to stop, then it stops at once, and says so", async () => {
    const database = await createTestDatabase("gateway_waiting_for_a_worker");
    try {
      const child = spawn(process.execPath, [...serviceEntryArgs, "--role=gateway"], {
        env: {
          ...process.env,
          DATABASE_URL: database.url,
          SESSION_SECRET: "roles-session-secret-0123456789abcdef0123456789",
          KEY_PEPPER: "roles-key-pepper-0123456789abcdef0123456789abcd",
          PORT: "0",
          LOG_LEVEL: "info",
        },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stdout = "";
      child.stdout.on("data", (chunk) => {
        stdout += String(chunk);
      });
      const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
      await vi.waitFor(
        () => expect(stdout).toContain("waiting for a worker process to prepare the projections"),
        { timeout: 60_000, interval: 100 },
      );

      child.kill("SIGTERM");

      expect(await exited).toBe(0);
      expect(stdout).toContain("stopped before it had started");
    } finally {
      await removeDeploymentQueueData({ redisUrl: process.env.REDIS_URL, databaseUrl: database.url });
      await database.drop();
    }
  }, 90_000);

  it("refuses an unknown role", async () => {
    const { code, stderr } = await startMain(["--role=edge"]);
    expect(code).toBe(2);
    expect(stderr.trim()).toBe("invalid configuration: --role edge");
  });
});
