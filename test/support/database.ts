import { randomBytes } from "node:crypto";
import pg from "pg";
import { inject } from "vitest";
import { allProjections } from "../../projections";
import { ProjectionRunner } from "../../src/ledger/projection/projection-runner";
import { openLedger } from "../../src/ledger/store/open-ledger";

export interface TestDatabase {
  url: string;
  name: string;
  drop(): Promise<void>;
}

/**
 * A fresh database on the test server, so test files never see each other's rows: empty, or with `migrated`
 * a copy of the run's template (global-setup.ts), its schema and projection tables this release's and its
 * ledger id its own. The copy is for tests that start a service or a ledger on it anyway: it spares each
 * database its migrations (about 40 ms to copy against 250 to create and migrate). A test of migrating, or
 * of a database holding no ledger, asks for an empty one.
 */
export async function createTestDatabase(
  label = "t",
  options: { migrated?: boolean } = {},
): Promise<TestDatabase> {
  const serverUrl = inject("postgresServerUrl");
  const name = `gw_${label.replace(/[^a-z0-9_]/gi, "_").toLowerCase()}_${randomBytes(4).toString("hex")}`;
  await withAdminClient(serverUrl, async (client) => {
    await client.query(
      options.migrated
        ? `CREATE DATABASE ${name} TEMPLATE ${inject("migratedTemplate")}`
        : `CREATE DATABASE ${name}`,
    );
  });
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  // The id names what a deployment keeps outside its database (its Redis queues): each copy draws its own.
  if (options.migrated)
    await withAdminClient(url.toString(), (client) =>
      client.query("UPDATE ledger_settings SET ledger_id = gen_random_uuid()"),
    );
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

/**
 * The run's migrated template: a database brought to this release's schema and projection tables, then closed
 * to connections (a database being copied must have none). Dropped when the run ends.
 */
export async function createMigratedTemplate(
  serverUrl: string,
): Promise<{ name: string; drop(): Promise<void> }> {
  const name = `gw_template_${randomBytes(4).toString("hex")}`;
  await withAdminClient(serverUrl, (client) => client.query(`CREATE DATABASE ${name}`));
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  const ledger = await openLedger({ databaseUrl: url.toString(), applicationName: "test-template" });
  try {
    const runner = new ProjectionRunner({
      pool: ledger.pool,
      connectionString: url.toString(),
      store: ledger.store,
      projections: allProjections,
      batchSizeMax: 1_000,
      standbyRetryMs: 100,
    });
    const client = await ledger.pool.connect();
    try {
      await runner.prepare(client);
    } finally {
      client.release();
    }
  } finally {
    await ledger.close();
  }
  await withAdminClient(serverUrl, (client) =>
    client.query(`ALTER DATABASE ${name} WITH ALLOW_CONNECTIONS false`),
  );
  return {
    name,
    drop: async () => {
      await withAdminClient(serverUrl, (client) =>
        client.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`),
      );
    },
  };
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
