import type { DeclaredView } from "../../../database/declared-schema";

/**
 * The accounts' funds as the log has moved them, kept inline with it by the append trigger
 * (ledger-apply-funds.ts), so they always equal a fold of the log (ledger-recompute-funds.ts; verify
 * compares them). `account_funds` (account-funds.ts) adds the holds not yet logged.
 *
 * It is two rows, so that placing a hold never waits for a settlement: `account_funds_authorized`, which
 * holds lock (and which holds logged without their settlement — written by an earlier release — move), and
 * `account_funds_settled`, moved by everything else. This view nets them — `held_won = settled.held_won +
 * authorized_won`.
 *
 * A plain join (no aggregate), so a lookup of one account is two index probes.
 */
export const accountFundsLoggedView: DeclaredView = {
  kind: "view",
  name: "account_funds_logged",
  sql: `
    CREATE OR REPLACE VIEW account_funds_logged AS
    SELECT settled.account_kind, settled.account_id, settled.balance_won,
           settled.held_won + coalesce(authorized.authorized_won, 0) AS held_won, settled.pending_won
    FROM account_funds_settled settled
    LEFT JOIN account_funds_authorized authorized USING (account_kind, account_id);
  `,
};
