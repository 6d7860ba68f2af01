import type { DeclaredFunction, DeclaredTrigger } from "../../database/declared-schema";

/**
 * A row trigger, so that every insert path chains its events: a row that arrives without chain_hash gets it
 * here. The append statement computes the hash of each stream's first event itself, from the head it reads
 * anyway (a lookup here costs more than the insert), and so does ledger_authorize_usage for its holds (each a
 * stream's first event); the rest is left to this trigger. Whoever supplies chain_hash must compute it exactly
 * so, and 'ledger verify' recomputes every one. Rows inserted earlier by the same statement are visible here,
 * so one statement may append several events to one stream, in order.
 */
export const ledgerEventsChainFunction: DeclaredFunction = {
  kind: "function",
  name: "ledger_events_chain",
  sql: `
    CREATE OR REPLACE FUNCTION ledger_events_chain() RETURNS trigger LANGUAGE plpgsql AS $$
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
  `,
};

export const ledgerEventsChainTrigger: DeclaredTrigger = {
  kind: "trigger",
  name: "ledger_events_chain",
  table: "ledger_events",
  sql: `
    CREATE OR REPLACE TRIGGER ledger_events_chain BEFORE INSERT ON ledger_events
      FOR EACH ROW WHEN (NEW.chain_hash IS NULL) EXECUTE FUNCTION ledger_events_chain();
  `,
};
