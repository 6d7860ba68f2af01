import type { DeclaredFunction } from "../../../database/declared-schema";

/**
 * Each key's latest request window (key-request-windows.ts).
 *
 * A fold of the whole log, one query: ledger_recompute_funds writes it (rebuild), src/ledger/inline-funds.ts
 * compares it with the live rows (verify). PARALLEL SAFE (it only reads), so a fold of a long log may use
 * workers.
 */
export const ledgerFoldKeyRequestWindowsFunction: DeclaredFunction = {
  kind: "function",
  name: "ledger_fold_key_request_windows",
  sql: `
    CREATE OR REPLACE FUNCTION ledger_fold_key_request_windows()
    RETURNS TABLE (key_id uuid, window_start timestamptz, requests integer)
    LANGUAGE sql STABLE PARALLEL SAFE AS $$
      SELECT held.key_id, held.minute, count(*)::integer
      FROM (
        SELECT hold.key_id, hold.minute, max(hold.minute) OVER (PARTITION BY hold.key_id) AS latest
        FROM ledger_events CROSS JOIN LATERAL ledger_hold_minute(ledger_events.data, ledger_events.metadata) hold
        WHERE ledger_events.type = 'UsageAuthorized'
      ) held
      WHERE held.minute = held.latest
      GROUP BY held.key_id, held.minute
    $$;
  `,
};
