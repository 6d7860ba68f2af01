import type { DeclaredTable } from "../../../database/declared-schema";

/**
 * What the orphan sweep keeps back of each hold it settled while the hold's gateway still had its session
 * (C10, "what was delivered is billed"): the part of the hold's estimate the sweep's estimated usage did not
 * use, still counted as held on the account (../inline-funds/account-funds.ts) and on the key, in the month
 * of the request's start (../inline-funds/key-spend.ts, ledger-key-limit-usage.ts). Such a gateway was
 * presumed dead while it lived — paused, or cut off from the database — and may have delivered output its
 * last progress record did not count; its correction bills it later (src/billing/holds/usage-outbox.ts), and
 * this keeps the money for it, so that other requests cannot spend it meanwhile.
 *
 * A row lasts until that correction arrives (which removes it), the gateway's session ends (it died: it will
 * bill nothing more; ledger-gateway-session-alive.ts), or `reserved_until` — one hold lifetime after the
 * sweep — passes; the sweep removes rows so ended. A gateway whose session was already gone when the sweep
 * settled its hold gets none: its money is free at once, as C10's orphans need.
 *
 * Written in the statement that completes the swept row (src/billing/holds/hold-row-completion.ts), so every
 * snapshot counts the hold whole: as an open hold, or as its estimate pending plus this reserve. Operational
 * state like `request_holds`: not folded from the log, and a rebuild leaves it alone.
 */
export const sweptHoldReservesTable: DeclaredTable = {
  kind: "table",
  name: "swept_hold_reserves",
  sql: `
    CREATE TABLE swept_hold_reserves (
      request_id text PRIMARY KEY,
      account_kind text NOT NULL,
      account_id text NOT NULL,
      key_id uuid NOT NULL,
      month text NOT NULL,
      gateway_instance text NOT NULL,
      reserved_won numeric NOT NULL CHECK (reserved_won > 0),
      reserved_until timestamptz NOT NULL
    );
    CREATE INDEX swept_hold_reserves_by_account ON swept_hold_reserves (account_kind, account_id);
  `,
};
