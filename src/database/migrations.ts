import type pg from "pg";
import { fundsSchemaSql } from "./funds-schema";
import { holdProgressSchemaSql } from "./hold-progress-schema";
import { inlinedChainHashSchemaSql } from "./inlined-chain-hash-schema";
import { keyLimitsSchemaSql } from "./key-limits-schema";
import { parallelFoldsSchemaSql } from "./parallel-folds-schema";
import { requestLogSchemaSql } from "./request-log-schema";
import { signInCodesSchemaSql } from "./sign-in-codes-schema";
import { singleParseFoldsSchemaSql } from "./single-parse-folds-schema";
import { splitFundsSchemaSql } from "./split-funds-schema";

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
  {
    id: 3,
    name: "ledger hash chain and checkpoints",
    sql: `
      -- Each event's hash chains it to its stream's previous event (src/ledger/integrity/event-hash.ts is the same
      -- function in TypeScript, for verify). NULL only for events written before this migration: the first
      -- checkpoints seal those.
      ALTER TABLE ledger_events ADD COLUMN chain_hash bytea;

      -- The canonical bytes: every variable-length field is preceded by its length in bytes (4, big-endian),
      -- so no two different events share a byte string; the json columns as the text stored.
      -- One SQL expression, so that the planner inlines it wherever it is called (the append statement, the
      -- trigger's cached plan): a SQL function that cannot be inlined is planned again in every transaction.
      CREATE FUNCTION ledger_event_hash(
        previous_hash bytea, stream_id text, stream_version integer, event_id uuid, type text,
        schema_version smallint, data json, metadata json
      ) RETURNS bytea LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
        SELECT sha256(
          previous_hash
          || int4send(length(convert_to(stream_id, 'UTF8'))) || convert_to(stream_id, 'UTF8')
          || int4send(stream_version)
          || uuid_send(event_id)
          || int4send(length(convert_to(type, 'UTF8'))) || convert_to(type, 'UTF8')
          || int2send(schema_version)
          || int4send(length(convert_to(data::text, 'UTF8'))) || convert_to(data::text, 'UTF8')
          || int4send(length(convert_to(metadata::text, 'UTF8'))) || convert_to(metadata::text, 'UTF8'))
      $$;

      -- A row trigger, so that every insert path chains its events: a row that arrives without chain_hash
      -- gets it here. The append statement computes the hash of each stream's first event itself, from the
      -- head it reads anyway (a lookup here costs more than the insert), and leaves the rest to this trigger;
      -- whoever supplies chain_hash must compute it exactly so, and 'ledger verify' recomputes every one.
      -- Rows inserted earlier by the same statement are visible here, so one statement may append several
      -- events to one stream, in order.
      CREATE FUNCTION ledger_events_chain() RETURNS trigger LANGUAGE plpgsql AS $$
      DECLARE
        previous bytea;
      BEGIN
        IF NEW.stream_version = 0 THEN
          previous := decode(repeat('00', 32), 'hex');
        ELSE
          SELECT chain_hash INTO previous FROM ledger_events
          WHERE stream_id = NEW.stream_id AND stream_version = NEW.stream_version - 1;
          IF NOT FOUND THEN
            RAISE EXCEPTION 'stream % has no version % to chain version % to',
              NEW.stream_id, NEW.stream_version - 1, NEW.stream_version
              USING ERRCODE = 'integrity_constraint_violation';
          END IF;
          -- The predecessor predates the chain: this event starts it.
          previous := coalesce(previous,
            decode(repeat('00', 32), 'hex'));
        END IF;
        NEW.chain_hash := ledger_event_hash(previous, NEW.stream_id, NEW.stream_version, NEW.event_id,
          NEW.type, NEW.schema_version, NEW.data, NEW.metadata);
        RETURN NEW;
      END $$;
      CREATE TRIGGER ledger_events_chain BEFORE INSERT ON ledger_events
        FOR EACH ROW WHEN (NEW.chain_hash IS NULL) EXECUTE FUNCTION ledger_events_chain();

      -- Signed seals over the global order (src/ledger/integrity/ledger-checkpointer.ts). Rows of their own, not
      -- events: a seal is a statement about the log, not a business fact, and as an event it would be
      -- inside the very order it seals, reach every projection and subscriber, and make every seal wait
      -- for the next one.
      CREATE TABLE ledger_checkpoints (
        sequence bigint PRIMARY KEY CHECK (sequence > 0),
        last_transaction_order bigint NOT NULL,
        last_position bigint NOT NULL,
        event_count integer NOT NULL CHECK (event_count > 0),
        events_root bytea NOT NULL,
        previous_checkpoint_hash bytea NOT NULL,
        checkpoint_hash bytea NOT NULL,
        signature bytea NOT NULL,
        public_key bytea NOT NULL,
        sealed_at timestamptz NOT NULL
      );
      CREATE INDEX ledger_checkpoints_last ON ledger_checkpoints (last_transaction_order, last_position);
      CREATE TRIGGER ledger_checkpoints_immutable BEFORE UPDATE OR DELETE OR TRUNCATE ON ledger_checkpoints
        FOR EACH STATEMENT EXECUTE FUNCTION ledger_events_immutable();
    `,
  },
  {
    id: 4,
    name: "account funds in an authorized and a settled row",
    sql: splitFundsSchemaSql,
  },
  {
    id: 5,
    name: "per-key limits, spend and request windows, checked with the holds",
    // Keys of a ledger from before this migration start with their spend folded from the log so far.
    sql: `${keyLimitsSchemaSql}
 SELECT ledger_recompute_funds();`,
  },
  {
    id: 6,
    name: "the inline read models folded with one parse of each event",
    sql: singleParseFoldsSchemaSql,
  },
  {
    id: 7,
    name: "the chain hash function declared stable, so that it is inlined",
    sql: inlinedChainHashSchemaSql,
  },
  {
    id: 8,
    name: "the inline read models' folds in parallel workers",
    sql: parallelFoldsSchemaSql,
  },
  {
    id: 9,
    name: "progress and renewal of the holds of requests in flight",
    sql: holdProgressSchemaSql,
  },
  {
    id: 10,
    name: "the request log behind the activity API, and the console's redeemed sign-in codes",
    sql: `${requestLogSchemaSql}\n${signInCodesSchemaSql}`,
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
