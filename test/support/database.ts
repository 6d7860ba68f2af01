import { randomBytes } from "node:crypto";
import pg from "pg";
import { inject } from "vitest";

export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

/** A fresh, empty database on the test server, so test files never see each other's rows. */
export async function createTestDatabase(label = "t"): Promise<TestDatabase> {
  const serverUrl = inject("postgresServerUrl");
  const name = `gw_${label.replace(/[^a-z0-9_]/gi, "_").toLowerCase()}_${randomBytes(4).toString("hex")}`;
  await withAdminClient(serverUrl, async (client) => {
    await client.query(`CREATE DATABASE ${name}`);
  });
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    name,
    drop: () =>
      withAdminClient(serverUrl, async (client) => {
        await sessionsGone(client, name);
        await client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      }),
  };
}

/**
 * A pool's `end()` resolves once its clients are told to end, before the server has read their goodbyes: a
 * drop WITH (FORCE) right after it may end such a session first, and its client, ending, then gets a FATAL
 * that nothing listens for (an uncaught error failing the whole run). So the drop waits for them, a little:
 * FORCE is for sessions a test left open.
 */
async function sessionsGone(client: pg.Client, database: string): Promise<void> {
  const deadline = Date.now() + 1_000;
  while (Date.now() < deadline) {
    const { rows } = await client.query<{ sessions: number }>(
      "SELECT count(*)::int AS sessions FROM pg_stat_activity WHERE datname = $1",
      [database],
    );
    if (rows[0]!.sessions === 0) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

async function withAdminClient<T>(serverUrl: string, use: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    return await use(client);
  } finally {
    await client.end();
  }
}
