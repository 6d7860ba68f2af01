import { randomBytes } from "node:crypto";
import { existsSync } from "node:fs";
import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { z } from "zod";
import { startEmbeddedPostgres } from "./embedded-postgres";

/**
 * The zero-install home, `./.data/`: the embedded PostgreSQL cluster and the secrets generated for it
 * (admin token, session secret, key pepper; the ledger signing key in a file of its own), kept so that
 * restarts keep sessions, keys and checkpoint signatures valid.
 */

export const localDataDirectory = path.resolve(".data");
export const localSecretsFile = path.join(localDataDirectory, "secrets.json");
const clusterDirectory = path.join(localDataDirectory, "postgres");

const localSecretsSchema = z.object({
  postgresPassword: z.string().min(16),
  adminToken: z.string().min(32),
  sessionSecret: z.string().min(32),
  keyPepper: z.string().min(32),
});
export type LocalSecrets = z.infer<typeof localSecretsSchema>;

/** The embedded setup's secrets, if this checkout has one (`npm start` ran here without DATABASE_URL). */
export async function loadLocalSecrets(): Promise<LocalSecrets | undefined> {
  if (!existsSync(localSecretsFile)) return undefined;
  return localSecretsSchema.parse(JSON.parse(await readFile(localSecretsFile, "utf8")));
}

export async function loadOrCreateLocalSecrets(): Promise<{ secrets: LocalSecrets; created: boolean }> {
  const existing = await loadLocalSecrets();
  if (existing) return { secrets: existing, created: false };
  const secrets: LocalSecrets = {
    postgresPassword: randomBytes(18).toString("base64url"),
    adminToken: `admin_${randomBytes(32).toString("base64url")}`,
    sessionSecret: randomBytes(48).toString("base64url"),
    keyPepper: randomBytes(48).toString("base64url"),
  };
  await mkdir(localDataDirectory, { recursive: true });
  await writeFile(localSecretsFile, `${JSON.stringify(secrets, null, 2)}\n`, { mode: 0o600 });
  await chmod(localSecretsFile, 0o600);
  return { secrets, created: true };
}

export interface LocalDatabase {
  url: string;
  stop(): Promise<void>;
}

/**
 * Starts the embedded cluster, or joins it when another process of this checkout (the service, while the
 * ledger CLI runs) already started it.
 */
export async function startLocalDatabase(
  password: string,
  onLog?: (line: string) => void,
): Promise<LocalDatabase> {
  const runningPort = await runningClusterPort();
  if (runningPort !== undefined) {
    return {
      url: `postgres://postgres:${encodeURIComponent(password)}@127.0.0.1:${runningPort}/postgres`,
      stop: async () => {},
    };
  }
  await mkdir(localDataDirectory, { recursive: true });
  return startEmbeddedPostgres({
    dataDirectory: clusterDirectory,
    port: 0,
    password,
    ...(onLog ? { onLog } : {}),
  });
}

async function runningClusterPort(): Promise<number | undefined> {
  const pidFile = path.join(clusterDirectory, "postmaster.pid");
  if (!existsSync(pidFile)) return undefined;
  // postmaster.pid: line 1 the server's pid, line 4 its port.
  const lines = (await readFile(pidFile, "utf8")).split("\n");
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || !Number.isInteger(port)) return undefined;
  try {
    process.kill(pid, 0);
    return port;
  } catch {
    return undefined;
  }
}

export const localLedgerSigningKeyFile = path.join(localDataDirectory, "ledger-signing-key");

/**
 * The embedded setup's ledger signing key (an Ed25519 seed, base64url), generated once and kept apart from
 * secrets.json so that an older secrets file stays valid.
 */
/** The embedded setup's ledger signing key if one was generated; never generates one. */
export async function readLocalLedgerSigningKey(): Promise<string | undefined> {
  if (!existsSync(localLedgerSigningKeyFile)) return undefined;
  return (await readFile(localLedgerSigningKeyFile, "utf8")).trim();
}

export async function loadOrCreateLedgerSigningKey(generateSeed: () => string): Promise<string> {
  if (existsSync(localLedgerSigningKeyFile))
    return (await readFile(localLedgerSigningKeyFile, "utf8")).trim();
  const seed = generateSeed();
  await mkdir(localDataDirectory, { recursive: true });
  await writeFile(localLedgerSigningKeyFile, `${seed}\n`, { mode: 0o600, flag: "wx" }).catch(
    async (error: unknown) => {
      // Another process of this checkout wrote it first: use theirs.
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    },
  );
  return (await readFile(localLedgerSigningKeyFile, "utf8")).trim();
}
