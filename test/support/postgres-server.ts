import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import pg from "pg";
import { startEmbeddedPostgres } from "../../src/database/embedded-postgres";

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
