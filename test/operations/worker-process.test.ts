import { spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { serviceEntryArgs } from "../support/built-entries";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { freePort } from "../support/free-port";
import { testSecrets } from "../support/gateway-harness";
import { eventually } from "../workers/queue-test-support";

/**
 * A worker-role process (no HTTP API) serves its health and metrics on METRICS_PORT: the composition root
 * wires the operations surface as the compose healthchecks expect. A gateway given one serves /metrics there
 * alone, off its public port. (Its exit code on SIGTERM belongs to the
 * shutdown's own tests: today it is 143, before and after this surface was added.)
 */

let database: TestDatabase;
beforeAll(async () => {
  database = await createTestDatabase("worker_process");
});
afterAll(async () => {
  await database?.drop();
});

describe("worker role", () => {
  it("serves /health/ready and /metrics on METRICS_PORT, and stops on SIGTERM", async () => {
    const port = await freePort();
    const environment: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: database.url,
      SESSION_SECRET: testSecrets.sessionSecret,
      KEY_PEPPER: testSecrets.keyPepper,
      METRICS_PORT: String(port),
      LOG_LEVEL: "warn",
    };
    delete environment.REDIS_URL;
    const child = spawn(process.execPath, [...serviceEntryArgs, "--role=worker"], {
      env: environment,
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (chunk) => {
      stderr += String(chunk);
    });
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    try {
      await eventually(
        "the worker is ready",
        async () =>
          (await fetch(`http://127.0.0.1:${port}/health/ready`).catch(() => undefined))?.status === 200,
        45_000,
      );
      const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      expect(metrics).toContain('won_gateway_queue_depth{queue="usage-charges",state="waiting"}');
      expect(metrics).toContain("won_gateway_projection_lag_seconds");
      expect(await (await fetch(`http://127.0.0.1:${port}/health/live`)).json()).toEqual({ status: "ok" });
    } finally {
      child.kill("SIGTERM");
    }
    await exited;
    expect(stderr).toBe("");
  }, 90_000);
});

describe("gateway role with a METRICS_PORT", () => {
  it("serves /metrics there alone, off its API port, and /health on both", async () => {
    const [apiPort, metricsPort] = [await freePort(), await freePort()];
    const environment: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: database.url,
      SESSION_SECRET: testSecrets.sessionSecret,
      KEY_PEPPER: testSecrets.keyPepper,
      PORT: String(apiPort),
      METRICS_PORT: String(metricsPort),
      LOG_LEVEL: "warn",
    };
    delete environment.REDIS_URL;
    // A worker first: it prepares the projections the gateway waits for.
    const workerEnvironment: NodeJS.ProcessEnv = { ...environment, PORT: "0" };
    delete workerEnvironment.METRICS_PORT;
    const worker = spawn(process.execPath, [...serviceEntryArgs, "--role=worker"], {
      env: workerEnvironment,
      stdio: ["ignore", "ignore", "pipe"],
    });
    const gateway = spawn(process.execPath, [...serviceEntryArgs, "--role=gateway"], {
      env: environment,
      stdio: ["ignore", "ignore", "pipe"],
    });
    let stderr = "";
    for (const child of [worker, gateway])
      child.stderr.on("data", (chunk) => {
        stderr += String(chunk);
      });
    const exited = [worker, gateway].map((child) => new Promise((resolve) => child.once("exit", resolve)));
    try {
      await eventually(
        "the gateway listens",
        async () =>
          (await fetch(`http://127.0.0.1:${apiPort}/health/live`).catch(() => undefined))?.ok === true,
        90_000,
      ).catch((error: unknown) => {
        throw new Error(`${String(error)}; the processes said: ${stderr}`);
      });
      const metrics = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
      expect(metrics.status).toBe(200);
      expect(await metrics.text()).toContain("won_gateway_requests_total");
      expect((await fetch(`http://127.0.0.1:${apiPort}/metrics`)).status).toBe(404);
      expect((await fetch(`http://127.0.0.1:${metricsPort}/health/live`)).status).toBe(200);
    } finally {
      gateway.kill("SIGTERM");
      worker.kill("SIGTERM");
    }
    await Promise.all(exited);
  }, 150_000);
});
