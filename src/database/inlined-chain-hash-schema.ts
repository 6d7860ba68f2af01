/**
 * Migration 7: the chain hash function inlined where it is called, as migration 3 meant it to be.
 *
 * `ledger_event_hash` was declared IMMUTABLE, but its body calls `convert_to`, which is STABLE, and the
 * planner never inlines an immutable SQL function whose body is not immutable. So every statement that
 * hashed (each single append, the `ledger_events_chain` trigger's first call in a transaction) set up and
 * planned the function's body again; a batch paid it once, a single append once per event. Declared as
 * what it is, it is inlined into the append statement, the trigger's expression and the checkpointer's
 * query; the bytes it hashes are unchanged.
 */
export const inlinedChainHashSchemaSql = `
  ALTER FUNCTION ledger_event_hash(bytea, text, integer, uuid, text, smallint, json, json) STABLE;
`;
