import type { DeclaredFunction, DeclaredTrigger } from "../../database/declared-schema";

/** Refuses every change to a row once written: the log (and its checkpoints) only grows. */
export const ledgerEventsImmutableFunction: DeclaredFunction = {
  kind: "function",
  name: "ledger_events_immutable",
  sql: `
    CREATE OR REPLACE FUNCTION ledger_events_immutable() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      RAISE EXCEPTION 'ledger events are never updated or deleted';
    END $$;
  `,
};

export const ledgerEventsImmutableTrigger: DeclaredTrigger = {
  kind: "trigger",
  name: "ledger_events_immutable",
  table: "ledger_events",
  sql: `
    CREATE OR REPLACE TRIGGER ledger_events_immutable BEFORE UPDATE OR DELETE OR TRUNCATE ON ledger_events
      FOR EACH STATEMENT EXECUTE FUNCTION ledger_events_immutable();
  `,
};
