import type pg from "pg";
import { advisoryLockKeys } from "./advisory-lock-keys";
import {
  createDeclaredObjects,
  type DeclaredObject,
  declaredObjectsDigest,
  dropDeclaredObjects,
} from "./declared-schema";
import type { Migration } from "./migration";
import { ledgerEventsMigration } from "./migrations/0001-ledger-events";
import { accountFundsMigration } from "./migrations/0002-account-funds";
import { ledgerHashChainMigration } from "./migrations/0003-ledger-hash-chain";
import { splitAccountFundsMigration } from "./migrations/0004-split-account-funds";
import { keyLimitsMigration } from "./migrations/0005-key-limits";
import { singleParseFoldsMigration } from "./migrations/0006-single-parse-folds";
import { inlinedChainHashMigration } from "./migrations/0007-inlined-chain-hash";
import { parallelFoldsMigration } from "./migrations/0008-parallel-folds";
import { holdProgressMigration } from "./migrations/0009-hold-progress";
import { requestLogMigration } from "./migrations/0010-request-log";
import { limitLookupsForLimitedKeysMigration } from "./migrations/0011-limit-lookups-for-limited-keys";
import { fundsByKindAndChainedHoldsMigration } from "./migrations/0012-funds-by-kind-and-chained-holds";
import { requestLogResponseIdsMigration } from "./migrations/0013-request-log-response-ids";
import { keyAllowedModelsMigration } from "./migrations/0014-key-allowed-models";
import { webhookOutboxMigration } from "./migrations/0015-webhook-outbox";
import { chargeBreakdownFunctionMigration } from "./migrations/0016-charge-breakdown-function";
import { requestHoldsMigration } from "./migrations/0017-request-holds";
import { keyLimitUsageFunctionMigration } from "./migrations/0018-key-limit-usage-function";
import { narrowHoldRowsMigration } from "./migrations/0019-narrow-hold-rows";
import { sweptHoldReservesMigration } from "./migrations/0020-swept-hold-reserves";
import { holdsDecidedInTurnMigration } from "./migrations/0021-holds-decided-in-turn";
import { holdsCheckTheKeyMigration } from "./migrations/0022-holds-check-the-key";
import { webhookDueMessagesByEndpointMigration } from "./migrations/0023-webhook-due-messages-by-endpoint";
import { recomputeLocksAuthorizedFundsMigration } from "./migrations/0024-recompute-locks-authorized-funds";
import { requestLogAnsweringModelsMigration } from "./migrations/0025-request-log-answering-models";
import { webhookSecretRotationMigration } from "./migrations/0026-webhook-secret-rotation";
import { chargeBreakdownTokenBoundMigration } from "./migrations/0027-charge-breakdown-token-bound";
import { holdProgressReportedInputMigration } from "./migrations/0028-hold-progress-reported-input";
import { endedSessionsMigration } from "./migrations/0029-ended-sessions";
import { holdProgressAnsweringModelMigration } from "./migrations/0030-hold-progress-answering-model";
import { ledgerIdMigration } from "./migrations/0031-ledger-id";
import { holdFundsInOnePassMigration } from "./migrations/0032-hold-funds-in-one-pass";

/**
 * The changes to the ledger's tables, in order (migration.ts). Projection tables are not here: each
 * projection declares its own and they are rebuilt from the log.
 */
export const migrations: readonly Migration[] = [
  ledgerEventsMigration,
  accountFundsMigration,
  ledgerHashChainMigration,
  splitAccountFundsMigration,
  keyLimitsMigration,
  singleParseFoldsMigration,
  inlinedChainHashMigration,
  parallelFoldsMigration,
  holdProgressMigration,
  requestLogMigration,
  limitLookupsForLimitedKeysMigration,
  fundsByKindAndChainedHoldsMigration,
  requestLogResponseIdsMigration,
  keyAllowedModelsMigration,
  webhookOutboxMigration,
  chargeBreakdownFunctionMigration,
  requestHoldsMigration,
  keyLimitUsageFunctionMigration,
  narrowHoldRowsMigration,
  sweptHoldReservesMigration,
  holdsDecidedInTurnMigration,
  holdsCheckTheKeyMigration,
  webhookDueMessagesByEndpointMigration,
  recomputeLocksAuthorizedFundsMigration,
  requestLogAnsweringModelsMigration,
  webhookSecretRotationMigration,
  chargeBreakdownTokenBoundMigration,
  holdProgressReportedInputMigration,
  endedSessionsMigration,
  holdProgressAnsweringModelMigration,
  ledgerIdMigration,
  holdFundsInOnePassMigration,
];

/**
 * Brings the database to the declared schema, at every start: the migrations not yet applied, then — when
 * any was, or the declared functions, views and triggers are not the ones last applied — those objects
 * dropped and created again from `objects`, then the backfills the new migrations asked for. Under an
 * advisory lock, so any number of processes may start at once, and in one transaction, so a failure leaves
 * the database as it was. An up-to-date database costs two reads and no DDL; a database a newer release
 * migrated is left as it is.
 */
export async function migrate(pool: pg.Pool, objects: readonly DeclaredObject[]): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query("SELECT pg_advisory_lock($1)", [advisoryLockKeys.migrations]);
    await client.query("BEGIN");
    try {
      await migrateInTransaction(client, objects);
      await client.query("COMMIT");
    } catch (error) {
      await client.query("ROLLBACK");
      throw error;
    }
  } finally {
    await client.query("SELECT pg_advisory_unlock($1)", [advisoryLockKeys.migrations]).catch(() => {});
    client.release();
  }
}

async function migrateInTransaction(
  client: pg.PoolClient,
  objects: readonly DeclaredObject[],
): Promise<void> {
  await client.query(`
    CREATE TABLE IF NOT EXISTS schema_migrations (
      id integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now()
    );
    -- The digest of the declared objects last created (declared-schema.ts).
    CREATE TABLE IF NOT EXISTS schema_declared_objects (
      singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
      digest text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    );`);
  const applied = await client.query<{ id: number }>("SELECT id FROM schema_migrations");
  const appliedIds = new Set(applied.rows.map((row) => row.id));
  // A newer release migrated this database (this process is older, restarted during a rollout or after a
  // rollback): its declarations are in force and must not be replaced by older ones.
  if (applied.rows.some((row) => row.id > migrations.length)) return;
  const pending = migrations.filter((migration) => !appliedIds.has(migration.id));
  const digest = declaredObjectsDigest(objects);
  const last = await client.query<{ digest: string }>("SELECT digest FROM schema_declared_objects");
  if (pending.length === 0 && last.rows[0]?.digest === digest) return;

  // Dropped first, so that no view or trigger stands in the way of a migration's change to a table.
  await dropDeclaredObjects(client, objects);
  for (const migration of pending) {
    await client.query(migration.sql);
    await client.query("INSERT INTO schema_migrations (id, name) VALUES ($1, $2)", [
      migration.id,
      migration.name,
    ]);
  }
  await createDeclaredObjects(client, objects);
  const backfills = new Set(pending.flatMap((migration) => migration.sqlOnceDeclared ?? []));
  for (const backfill of backfills) await client.query(backfill);
  await client.query(
    `INSERT INTO schema_declared_objects (digest) VALUES ($1)
     ON CONFLICT (singleton) DO UPDATE SET digest = excluded.digest, applied_at = now()`,
    [digest],
  );
}

/**
 * Why this database's schema is not one this release can read as it stands — no ledger at all, a migration
 * of this release not applied, other declared objects — or undefined when it is this release's (or a
 * newer one's, whose declarations are in force). For commands that must not change what they look at.
 */
export async function schemaShortfallOf(
  pool: Pick<pg.Pool, "query">,
  objects: readonly DeclaredObject[],
): Promise<string | undefined> {
  const tables = await pool.query<{ migrations: string | null; declared: string | null }>(
    "SELECT to_regclass('schema_migrations')::text AS migrations, to_regclass('schema_declared_objects')::text AS declared",
  );
  if (tables.rows[0]?.migrations == null || tables.rows[0].declared == null) return "holds no ledger";
  const applied = await pool.query<{ id: number }>("SELECT id FROM schema_migrations");
  const appliedIds = new Set(applied.rows.map((row) => row.id));
  if (applied.rows.some((row) => row.id > migrations.length)) return undefined;
  const missing = migrations.filter((migration) => !appliedIds.has(migration.id));
  if (missing.length > 0)
    return `lacks ${missing.length} of this release's schema migrations (the first: ${missing[0]!.name})`;
  const last = await pool.query<{ digest: string }>("SELECT digest FROM schema_declared_objects");
  if (last.rows[0]?.digest !== declaredObjectsDigest(objects))
    return "holds views and functions of another release";
  return undefined;
}

/** Every migration has the next id: a gap or a repeat is a merge gone wrong, caught at load. */
for (const [index, migration] of migrations.entries()) {
  if (migration.id !== index + 1) {
    throw new Error(`migration ${migration.name} has id ${migration.id}, expected ${index + 1}`);
  }
}
