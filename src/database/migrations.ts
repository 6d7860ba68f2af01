import type pg from "pg";
import { fundsSchemaSql } from "./funds-schema";

/**
 * Schema of the ledger itself. Projection tables are not here: each projection declares its own and they
 * are rebuilt from the log. Migrations run at start under an advisory lock, so any number of processes may
 * start at once; each migration runs once, in its own transaction.
 */
interface Migration {
  id: number;
  name: string;
  sql: string;
}

const migrations: readonly Migration[] = [
  {
    id: 1,
    name: "ledger events",
    sql: `
      CREATE TABLE ledger_events (
        transaction_order bigint NOT NULL,
        position bigint GENERATED ALWAYS AS IDENTITY,
        event_id uuid NOT NULL,
        stream_id text NOT NULL,
        stream_version integer NOT NULL,
        type text NOT NULL,
        schema_version smallint NOT NULL,
        -- json, not jsonb: the log is written once and read whole, and json is stored and returned as the
        -- text it was given, several times faster to read back than jsonb.
        data json NOT NULL,
        metadata json NOT NULL,
        recorded_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT ledger_events_pkey PRIMARY KEY (transaction_order, position),
        CONSTRAINT ledger_events_event_id_key UNIQUE (event_id),
        CONSTRAINT ledger_events_stream_version_key UNIQUE (stream_id, stream_version)
      );

      -- transaction_order = the writing transaction's id + offset. The offset only moves when a restored
      -- database hands out transaction ids below ones already stored (see postgres-event-store.ts).
      CREATE TABLE ledger_settings (
        singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
        transaction_order_offset bigint NOT NULL DEFAULT 0
      );
      INSERT INTO ledger_settings DEFAULT VALUES;

      CREATE FUNCTION ledger_events_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        RAISE EXCEPTION 'ledger events are never updated or deleted';
      END $$;
      CREATE TRIGGER ledger_events_immutable BEFORE UPDATE OR DELETE OR TRUNCATE ON ledger_events
        FOR EACH STATEMENT EXECUTE FUNCTION ledger_events_immutable();

      CREATE TABLE projection_checkpoints (
        projection text PRIMARY KEY,
        definition_version integer NOT NULL,
        commit_position bigint NOT NULL,
        prepare_position bigint NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
      );
    `,
  },
  {
    id: 2,
    name: "account funds, open holds and the authorization of usage",
    // A ledger from before this migration starts with its funds folded from the log so far.
    sql: `${fundsSchemaSql}
 SELECT ledger_recompute_funds();`,
  },
];

const migrationLockKey = 7_310_001;

export async function migrate(pool: pg.Pool): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query("SELECT pg_advisory_lock($1)", [migrationLockKey]);
    await client.query(`
      CREATE TABLE IF NOT EXISTS schema_migrations (
        id integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now()
      )`);
    const applied = await client.query<{ id: number }>("SELECT id FROM schema_migrations");
    const appliedIds = new Set(applied.rows.map((row) => row.id));
    for (const migration of migrations) {
      if (appliedIds.has(migration.id)) continue;
      await client.query("BEGIN");
      try {
        await client.query(migration.sql);
        await client.query("INSERT INTO schema_migrations (id, name) VALUES ($1, $2)", [
          migration.id,
          migration.name,
        ]);
        await client.query("COMMIT");
      } catch (error) {
        await client.query("ROLLBACK");
        throw error;
      }
    }
  } finally {
    await client.query("SELECT pg_advisory_unlock($1)", [migrationLockKey]).catch(() => {});
    client.release();
  }
}
