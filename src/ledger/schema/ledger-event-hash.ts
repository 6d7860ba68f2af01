import type { DeclaredFunction } from "../../database/declared-schema";

/**
 * An event's link in its stream's hash chain (src/ledger/integrity/event-hash.ts is the same function in
 * TypeScript, for verify). The canonical bytes: every variable-length field is preceded by its length in
 * bytes (4, big-endian), so no two different events share a byte string; the json columns as the text stored.
 *
 * One SQL expression, so that the planner inlines it wherever it is called (the append statement, the chain
 * trigger's cached plan, the checkpointer's query): a SQL function that cannot be inlined is planned again in
 * every transaction. STABLE, not IMMUTABLE, because `convert_to` is STABLE: the planner never inlines an
 * immutable function whose body is not.
 */
export const ledgerEventHashFunction: DeclaredFunction = {
  kind: "function",
  name: "ledger_event_hash",
  sql: `
    CREATE OR REPLACE FUNCTION ledger_event_hash(
      previous_hash bytea, stream_id text, stream_version integer, event_id uuid, type text,
      schema_version smallint, data json, metadata json
    ) RETURNS bytea LANGUAGE sql STABLE PARALLEL SAFE AS $$
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
  `,
};
