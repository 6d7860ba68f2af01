import { randomUUID } from "node:crypto";
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type DeclaredObject, declaredObjectsDigest } from "../../src/database/declared-schema";
import { migrate, migrations } from "../../src/database/migrations";
import { ledgerSchema } from "../../src/ledger/schema/ledger-schema";
import { migrate as migrateBeforeSchemaHome } from "../fixtures/migrations-before-schema-home/migrations";
import { createTestDatabase, type TestDatabase } from "../support/database";
import { type SchemaCatalog, schemaCatalogOf } from "../support/schema-catalog";

interface OpenDatabase {
  database: TestDatabase;
  pool: pg.Pool;
}

const opened: OpenDatabase[] = [];

async function emptyDatabase(label: string): Promise<OpenDatabase> {
  const database = await createTestDatabase(label);
  const open = { database, pool: new pg.Pool({ connectionString: database.url, max: 2 }) };
  opened.push(open);
  return open;
}

afterAll(async () => {
  for (const { database, pool } of opened) {
    await pool.end();
    await database.drop();
  }
});

/** The declarations executed as they are, without a migration: what the migrations must produce. */
async function declaredCatalog(): Promise<SchemaCatalog> {
  const { pool } = await emptyDatabase("declared");
  for (const table of ledgerSchema.tables) await pool.query(table.sql);
  for (const object of ledgerSchema.objects) await pool.query(object.sql);
  return schemaCatalogOf(pool);
}

const account = { kind: "customer", id: "acct-upgrade" };
const keyId = "5b0e7c53-7f1e-4a53-9c1e-2f3b4a5c6d7e";
const startedAt = "2026-03-31T15:30:00.000Z"; // April in Seoul

/** A small ledger written straight into ledger_events, as any version of the schema accepts it. */
const ledgerEvents: { streamId: string; version: number; type: string; data: object }[] = [
  {
    streamId: "account-customer-acct-upgrade",
    version: 0,
    type: "CreditToppedUp",
    data: { account, amountWon: "1000" },
  },
  {
    streamId: `key-${keyId}`,
    version: 0,
    type: "ApiKeyLimitsSet",
    data: { keyId, monthlySpendLimitWon: "5000", totalSpendLimitWon: null, rateLimitRequestsPerMinute: 60 },
  },
  ...["req-settled", "req-open"].map((requestId) => ({
    streamId: `usage-${requestId}`,
    version: 0,
    type: "UsageAuthorized",
    data: {
      requestId,
      account,
      keyId,
      startedAt,
      expiresAt: "2026-03-31T15:35:00.000Z",
      gatewayInstance: "gateway-1",
      holdWon: "100",
    },
  })),
  {
    streamId: "usage-req-settled",
    version: 1,
    type: "UsageRecorded",
    data: { requestId: "req-settled", account, keyId, startedAt, heldWon: "100", pendingWon: "40" },
  },
  {
    streamId: "usage-req-settled",
    version: 2,
    type: "UsageCharged",
    data: { requestId: "req-settled", account, keyId, startedAt, amountWon: "40", releasedPendingWon: "40" },
  },
];

async function appendRaw(pool: pg.Pool, events: typeof ledgerEvents): Promise<void> {
  for (const [index, event] of events.entries()) {
    await pool.query(
      `INSERT INTO ledger_events (transaction_order, event_id, stream_id, stream_version, type, schema_version, data, metadata)
       VALUES ($1, $2, $3, $4, $5, 1, $6, '{}')`,
      [index + 1, randomUUID(), event.streamId, event.version, event.type, JSON.stringify(event.data)],
    );
  }
}

/** The inline read models, as text so that 100 and 100.000000 do not compare equal by accident. */
async function inlineReadModels(pool: pg.Pool) {
  const rows = async (sql: string) => (await pool.query(sql)).rows;
  return {
    funds: await rows(
      "SELECT account_kind, account_id, balance_won::text, held_won::text, pending_won::text FROM account_funds ORDER BY 1, 2",
    ),
    openHolds: await rows("SELECT request_id, held_won::text FROM open_holds ORDER BY 1"),
    keySpend: await rows(
      "SELECT key_id, month, held_won::text, pending_won::text, charged_won::text FROM key_spend ORDER BY 1, 2",
    ),
    keyLimits: await rows("SELECT * FROM key_limits ORDER BY 1"),
    requestWindows: await rows("SELECT key_id, requests FROM key_request_windows ORDER BY 1"),
  };
}

/**
 * The declarations as the last migration left them. A release that changes a declaration adds a migration,
 * even an empty one (docs/schema.md): that is how an older process, restarted during a rollout, knows a newer
 * release migrated the database and leaves its declarations in force. Changing one without a migration puts the
 * older definitions back under the newer release's processes; this record makes that a failing test.
 */
const declarationsOfTheLastMigration = {
  migrationId: 32,
  digest: "288a3b98053201ccf3b23f338c93b521ebc4267487e5984a36c9caacfe33a990",
};

describe("a change of declarations", () => {
  it("comes with a migration of its own, and the record here names both", () => {
    expect(
      { migrationId: migrations.length, digest: declaredObjectsDigest(ledgerSchema.objects) },
      "declarations changed: add a migration (its sql may be empty, docs/schema.md) and record its id and the new digest here",
    ).toEqual(declarationsOfTheLastMigration);
  });
});

describe("the declared schema", () => {
  let declared: SchemaCatalog;
  let migrated: SchemaCatalog;

  beforeAll(async () => {
    declared = await declaredCatalog();
    const { pool } = await emptyDatabase("migrated");
    await migrate(pool, ledgerSchema.objects);
    migrated = await schemaCatalogOf(pool);
  });

  it("is what the migrations make of an empty database: every table, view, function and trigger", () => {
    expect(migrated).toEqual(declared);
    // Not two empty catalogs: every declared object is there.
    expect(
      migrated.functions.map((catalogFunction) => catalogFunction.signature.replace(/\(.*/, "")),
    ).toEqual(
      ledgerSchema.objects
        .filter((object) => object.kind === "function")
        .map((object) => object.name)
        .sort(),
    );
    expect(new Set(migrated.columns.map((column) => column.table))).toEqual(
      new Set(
        [...ledgerSchema.tables, ...ledgerSchema.objects.filter((object) => object.kind === "view")].map(
          (relation) => relation.name,
        ),
      ),
    );
    expect(migrated.triggers.map((trigger) => trigger.name)).toEqual(
      ledgerSchema.objects
        .filter((object) => object.kind === "trigger")
        .map((object) => object.name)
        .sort(),
    );
  });

  it.each([1, 2, 3, 4, 5, 6, 7, 8, 9])(
    "is what a database the previous migrations left at migration %i becomes, its read models folded from its log",
    async (lastId) => {
      // Given a database migrated by the code before the schema had one home, with events in its log
      const { pool } = await emptyDatabase(`upgrade_${lastId}`);
      await migrateBeforeSchemaHome(pool, lastId);
      await appendRaw(pool, ledgerEvents);

      // When today's migrate runs
      await migrate(pool, ledgerSchema.objects);

      // Then its catalog is the declared one, and its inline read models are the fold of its log
      expect(await schemaCatalogOf(pool)).toEqual(declared);
      const upgraded = await inlineReadModels(pool);
      expect(upgraded.funds).toEqual([
        {
          account_kind: "customer",
          account_id: "acct-upgrade",
          balance_won: "960",
          held_won: "100",
          pending_won: "0",
        },
      ]);
      expect(upgraded.openHolds).toEqual([{ request_id: "req-open", held_won: "100" }]);
      expect(upgraded.keySpend).toEqual([
        { key_id: keyId, month: "2026-04", held_won: "100", pending_won: "0", charged_won: "40" },
      ]);
      expect(upgraded.keyLimits).toEqual([
        {
          key_id: keyId,
          monthly_spend_limit_won: "5000",
          total_spend_limit_won: null,
          rate_limit_requests_per_minute: 60,
          // A v1 event names no models: the key may call every one.
          allowed_models: null,
        },
      ]);
      await pool.query("SELECT ledger_recompute_funds()");
      expect(await inlineReadModels(pool)).toEqual(upgraded);

      // And the append trigger in force moves the funds
      await pool.query(
        `INSERT INTO ledger_events (transaction_order, event_id, stream_id, stream_version, type, schema_version, data, metadata)
         VALUES (100, $1, 'account-customer-acct-upgrade', 1, 'CreditToppedUp', 1, $2, '{}')`,
        [randomUUID(), JSON.stringify({ account, amountWon: "10" })],
      );
      expect((await inlineReadModels(pool)).funds[0]?.balance_won).toBe("970");
    },
  );

  it("is migrated once when several processes start at once on an empty database", async () => {
    const { database } = await emptyDatabase("concurrent");
    const pools = [1, 2, 3].map(() => new pg.Pool({ connectionString: database.url, max: 1 }));
    try {
      await Promise.all(pools.map((pool) => migrate(pool, ledgerSchema.objects)));
      expect(await schemaCatalogOf(pools[0]!)).toEqual(declared);
      const applied = await pools[0]!.query<{ id: number }>("SELECT id FROM schema_migrations ORDER BY id");
      expect(applied.rows.map((row) => row.id)).toEqual(migrations.map((migration) => migration.id));
    } finally {
      await Promise.all(pools.map((pool) => pool.end()));
    }
  });

  it("leaves the declarations of a database a newer release migrated in force", async () => {
    const { pool } = await emptyDatabase("newer");
    const newer: DeclaredObject[] = ledgerSchema.objects.map((object) =>
      object.name === "ledger_seoul_month"
        ? { ...object, sql: object.sql.replace("'YYYY-MM')", "'YYYY-MM') -- newer") }
        : object,
    );
    await migrate(pool, newer);
    await pool.query("INSERT INTO schema_migrations (id, name) VALUES ($1, 'from a newer release')", [
      migrations.length + 1,
    ]);

    await migrate(pool, ledgerSchema.objects);

    const definition = await pool.query("SELECT pg_get_functiondef('ledger_seoul_month'::regproc) AS sql");
    expect(definition.rows[0]?.sql).toContain("-- newer");
  });

  it("leaves an up-to-date database alone, and applies a changed declaration at the next start", async () => {
    const { pool } = await emptyDatabase("restart");
    await migrate(pool, ledgerSchema.objects);
    const functionOid = "SELECT 'ledger_seoul_month'::regproc::oid::text AS oid";
    const before = (await pool.query(functionOid)).rows[0]?.oid;

    await migrate(pool, ledgerSchema.objects);
    expect((await pool.query(functionOid)).rows[0]?.oid).toBe(before);

    const changed: DeclaredObject[] = ledgerSchema.objects.map((object) =>
      object.name === "ledger_seoul_month"
        ? { ...object, sql: object.sql.replace("'YYYY-MM')", "'YYYY-MM') -- changed") }
        : object,
    );
    await migrate(pool, changed);
    const definition = await pool.query("SELECT pg_get_functiondef('ledger_seoul_month'::regproc) AS sql");
    expect(definition.rows[0]?.sql).toContain("-- changed");
  });

  it("defines each function, view and trigger once in src/, in the declaration the database is given", async () => {
    const definitions = new Map<string, number>();
    for (const file of await sourceFiles("src")) {
      const text = await readFile(file, "utf8");
      for (const [, kind, name] of text.matchAll(/CREATE (?:OR REPLACE )?(FUNCTION|VIEW|TRIGGER) (\w+)/g)) {
        const object = `${kind!.toLowerCase()} ${name}`;
        definitions.set(object, (definitions.get(object) ?? 0) + 1);
      }
    }
    expect(Object.fromEntries(definitions)).toEqual(
      Object.fromEntries(ledgerSchema.objects.map((object) => [`${object.kind} ${object.name}`, 1])),
    );
  });
});

async function sourceFiles(directory: string): Promise<string[]> {
  const entries = await readdir(directory, { withFileTypes: true, recursive: true });
  return entries
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
    .map((entry) => join(entry.parentPath, entry.name));
}
