import { spawn } from "node:child_process";
import { readFile } from "node:fs/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, type TestDatabase } from "./support/database";
import { freePort } from "./support/free-port";
import { type ServiceProcess, spawnRole } from "./support/service-process";
import { removeDeploymentQueueData } from "./workers/queue-test-support";

/**
 * The image's HEALTHCHECK, run as Docker runs it — its exec-form command, in the environment the image sets —
 * against each role started with that environment: a worker (which opens no port but METRICS_PORT) as well as
 * a gateway. Checked without a Docker engine: the command and the environment are read from the Dockerfile.
 */

let dockerfile: string;
let database: TestDatabase | undefined;
const started: ServiceProcess[] = [];

/** The runtime stage's ENV, its continuation lines joined. */
function imageEnvironment(): Record<string, string> {
  const runtime = dockerfile.slice(dockerfile.indexOf("AS runtime\n"));
  const env = /^ENV ((?:.*\\\n)*.*)$/m.exec(runtime)![1]!.replace(/\\\n/g, " ");
  return Object.fromEntries(
    env
      .trim()
      .split(/\s+/)
      .map((pair) => pair.split("=") as [string, string]),
  );
}

/** The HEALTHCHECK's exec-form command. */
function healthCheckCommand(): string[] {
  const check = /^HEALTHCHECK .*\\\n\s*CMD (\[.*\])$/m.exec(dockerfile)![1]!;
  return JSON.parse(check) as string[];
}

function runHealthCheck(environment: NodeJS.ProcessEnv): Promise<number | null> {
  const [command, ...args] = healthCheckCommand();
  expect(command).toBe("node");
  const child = spawn(process.execPath, args, { env: environment, stdio: "ignore" });
  return new Promise((resolve) => child.once("exit", resolve));
}

beforeAll(async () => {
  dockerfile = await readFile(new URL("../Dockerfile", import.meta.url), "utf8");
});
afterAll(async () => {
  for (const running of started) if (running.child.exitCode === null) running.child.kill("SIGKILL");
  if (database)
    await removeDeploymentQueueData({ redisUrl: process.env.REDIS_URL, databaseUrl: database.url });
  await database?.drop();
});

describe("the image's health check", () => {
  it("opens METRICS_PORT for every role: a worker has a port to be probed on", () => {
    expect(imageEnvironment()).toMatchObject({ PORT: "8080", METRICS_PORT: "9464" });
  });

  it("given a worker and a gateway started in the image's environment, then the probe finds each live", async () => {
    database = await createTestDatabase("image_health_check");
    const environmentOf = async (): Promise<NodeJS.ProcessEnv> => ({
      ...process.env,
      ...imageEnvironment(),
      // The image's ports and address, moved to free ones on this machine's loopback.
      HOST: "127.0.0.1",
      PORT: String(await freePort()),
      METRICS_PORT: String(await freePort()),
      NODE_ENV: "test",
      DATABASE_URL: database!.url,
      SESSION_SECRET: "image-session-secret-0123456789abcdef0123456789",
      KEY_PEPPER: "image-key-pepper-0123456789abcdef0123456789abcd",
    });
    const workerEnvironment = await environmentOf();
    started.push(await spawnRole("worker", workerEnvironment));
    const gatewayEnvironment = await environmentOf();
    started.push(await spawnRole("gateway", gatewayEnvironment));

    expect(await runHealthCheck(workerEnvironment)).toBe(0);
    expect(await runHealthCheck(gatewayEnvironment)).toBe(0);
  }, 120_000);
});
