import type pg from "pg";

/** The runner's own bookkeeping, not part of the declared schema. */
const runnerTables = ["schema_migrations", "schema_declared_objects"];

/**
 * Every table, view, function and trigger in the database's public schema as PostgreSQL prints it back
 * (pg_get_functiondef, pg_get_viewdef, pg_get_triggerdef, pg_attribute, pg_get_constraintdef, pg_indexes),
 * in a stable order, so two databases compare with one `toEqual`.
 */
export interface SchemaCatalog {
  columns: {
    table: string;
    position: number;
    name: string;
    type: string;
    notNull: boolean;
    default: string | null;
    identity: string;
    generated: string;
  }[];
  constraints: { table: string; name: string; definition: string }[];
  indexes: { name: string; definition: string }[];
  sequences: string[];
  views: { name: string; definition: string }[];
  functions: { signature: string; definition: string }[];
  triggers: { name: string; definition: string }[];
}

export async function schemaCatalogOf(client: Pick<pg.ClientBase, "query">): Promise<SchemaCatalog> {
  const columns = await client.query(
    `SELECT relation.relname AS "table",
            row_number() OVER (PARTITION BY relation.oid ORDER BY attribute.attnum)::int AS position,
            attribute.attname AS name, format_type(attribute.atttypid, attribute.atttypmod) AS type,
            attribute.attnotnull AS "notNull", pg_get_expr(expression.adbin, expression.adrelid) AS default,
            attribute.attidentity AS identity, attribute.attgenerated AS generated
     FROM pg_class relation
     JOIN pg_attribute attribute ON attribute.attrelid = relation.oid
       AND attribute.attnum > 0 AND NOT attribute.attisdropped
     LEFT JOIN pg_attrdef expression ON expression.adrelid = relation.oid AND expression.adnum = attribute.attnum
     WHERE relation.relnamespace = 'public'::regnamespace AND relation.relkind IN ('r', 'p', 'v')
       AND relation.relname <> ALL ($1)
     ORDER BY 1, 2`,
    [runnerTables],
  );
  const constraints = await client.query(
    `SELECT conrelid::regclass::text AS "table", conname AS name, pg_get_constraintdef(oid) AS definition
     FROM pg_constraint
     WHERE connamespace = 'public'::regnamespace AND conrelid::regclass::text <> ALL ($1)
     ORDER BY 1, 2`,
    [runnerTables],
  );
  const indexes = await client.query(
    `SELECT indexname AS name, indexdef AS definition FROM pg_indexes
     WHERE schemaname = 'public' AND tablename <> ALL ($1) ORDER BY 1`,
    [runnerTables],
  );
  const sequences = await client.query<{ name: string }>(
    `SELECT relname AS name FROM pg_class WHERE relkind = 'S' AND relnamespace = 'public'::regnamespace ORDER BY 1`,
  );
  const views = await client.query(
    `SELECT viewname AS name, definition FROM pg_views WHERE schemaname = 'public' ORDER BY 1`,
  );
  const functions = await client.query(
    `SELECT oid::regprocedure::text AS signature, pg_get_functiondef(oid) AS definition
     FROM pg_proc WHERE pronamespace = 'public'::regnamespace ORDER BY 1`,
  );
  const triggers = await client.query(
    `SELECT tgname AS name, pg_get_triggerdef(oid) AS definition FROM pg_trigger
     WHERE NOT tgisinternal AND tgrelid::regclass::text <> ALL ($1)
       AND (SELECT relnamespace FROM pg_class WHERE oid = tgrelid) = 'public'::regnamespace
     ORDER BY 1`,
    [runnerTables],
  );
  return {
    columns: columns.rows,
    constraints: constraints.rows,
    indexes: indexes.rows,
    sequences: sequences.rows.map((row) => row.name),
    views: views.rows,
    functions: functions.rows,
    triggers: triggers.rows,
  };
}
