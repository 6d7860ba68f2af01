import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { Redis } from "ioredis";
import { findFreePort } from "../../src/database/embedded-postgres";

/**
 * A Redis server of the test's own (`redis-server` on a free port, no persistence), for tests that lose
 * Redis's data on purpose: flushing or restarting the shared one would break every other test running.
 * Only this process's child is ever killed, by its pid.
 */
export interface PrivateRedis {
  url: string;
  flushAll(): Promise<void>;
  /** Kills the server (SIGKILL, as a crash) and starts an empty one on the same port after `downMs`. */
  restartEmpty(downMs: number): Promise<void>;
  /**
   * Stops the server without closing anything (SIGSTOP, as a frozen host) for `frozenMs`, then lets it go
   * on (SIGCONT) with its data and connections as they were. `beforeThaw` runs at the end, still frozen.
   */
  freezeFor(frozenMs: number, beforeThaw?: () => Promise<void>): Promise<void>;
  stop(): Promise<void>;
}

export async function startPrivateRedis(): Promise<PrivateRedis> {
  const started = await startOnFreePort();
  const { port, url } = started;
  let server = started.server;

  return {
    url,
    async flushAll() {
      await withClient(url, (client) => client.flushall());
    },
    async restartEmpty(downMs) {
      await killServer(server);
      await new Promise((resolve) => setTimeout(resolve, downMs));
      server = await startServer(port, url);
    },
    async freezeFor(frozenMs, beforeThaw) {
      server.kill("SIGSTOP");
      try {
        await new Promise((resolve) => setTimeout(resolve, frozenMs));
        await beforeThaw?.();
      } finally {
        server.kill("SIGCONT");
      }
    },
    stop: () => killServer(server),
  };
}

/**
 * Redis cannot be asked to pick its own port, and a port found free may be taken by an outgoing connection
 * before the server binds it: then the server exits, and another port is tried.
 */
async function startOnFreePort(): Promise<{ port: number; url: string; server: ChildProcess }> {
  for (let attempt = 1; ; attempt += 1) {
    const port = await findFreePort();
    const url = `redis://127.0.0.1:${port}`;
    try {
      return { port, url, server: await startServer(port, url) };
    } catch (error) {
      if (attempt === 3) throw error;
    }
  }
}

async function startServer(port: number, url: string): Promise<ChildProcess> {
  const server = spawn(
    "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
    { stdio: "ignore" },
  );
  const failed = once(server, "error");
  failed.catch(() => {});
  for (let attempt = 0; attempt < 100; attempt += 1) {
    const ready = await withClient(url, (client) => client.ping())
      .then(() => true)
      .catch(() => false);
    if (ready) return server;
    if (server.exitCode !== null) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  await killServer(server);
  throw new Error(`redis-server did not start on port ${port}`);
}

async function killServer(server: ChildProcess): Promise<void> {
  if (server.exitCode !== null || server.signalCode !== null) return;
  const exited = once(server, "exit");
  server.kill("SIGKILL");
  await exited;
}

async function withClient<T>(url: string, use: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis(url, { maxRetriesPerRequest: 0, connectTimeout: 500, lazyConnect: true });
  client.on("error", () => {});
  try {
    await client.connect();
    return await use(client);
  } finally {
    client.disconnect();
  }
}
