import type { DeclaredView } from "../../../database/declared-schema";

/**
 * What each key has spent per Seoul month (the month of its usage's `startedAt`, as billing dates it) as the
 * log has moved it: held, pending and charged, moved by the same events and amounts as the account's funds
 * (verify compares it with a fold; `key_spend` adds the holds not yet logged). A void names no key, so
 * its key and month are its stream's authorization's. Split like the account's funds (account-funds.ts) so
 * that a hold never waits for a settlement: `key_spend_authorized` holds the sum of the holds placed,
 * `key_spend_settled` everything else; this view nets them.
 *
 * Grouped on the key columns, so a lookup of one key is pushed into both tables' primary keys.
 */
export const keySpendLoggedView: DeclaredView = {
  kind: "view",
  name: "key_spend_logged",
  sql: `
    CREATE OR REPLACE VIEW key_spend_logged AS
    SELECT parts.key_id, parts.month, sum(parts.held_won) AS held_won, sum(parts.pending_won) AS pending_won,
           sum(parts.charged_won) AS charged_won
    FROM (
      SELECT settled.key_id, settled.month, settled.held_won, settled.pending_won, settled.charged_won
      FROM key_spend_settled settled
      UNION ALL
      SELECT authorized.key_id, authorized.month, authorized.authorized_won, 0, 0
      FROM key_spend_authorized authorized
    ) parts
    GROUP BY parts.key_id, parts.month;
  `,
};

/**
 * What each key has spent per Seoul month: the log's (`key_spend_logged`) and its hold rows not yet logged
 * (../holds/request-holds.ts), counted as `account_funds` counts them — an open hold as held, a settled one
 * as its pending cost, what the orphan sweep keeps back of a swept hold (../holds/swept-hold-reserves.ts) as
 * held until its time — but for an open hold its account cut to the room left, which the key holds at its
 * whole estimate, as its limits count it (../holds/ledger-key-limit-usage.ts).
 */
export const keySpendView: DeclaredView = {
  kind: "view",
  name: "key_spend",
  sql: `
    CREATE OR REPLACE VIEW key_spend AS
    SELECT parts.key_id, parts.month, sum(parts.held_won) AS held_won, sum(parts.pending_won) AS pending_won,
           sum(parts.charged_won) AS charged_won
    FROM (
      SELECT logged.key_id, logged.month, logged.held_won, logged.pending_won, logged.charged_won
      FROM key_spend_logged logged
      UNION ALL
      SELECT holds.key_id, holds.month, CASE WHEN holds.settled_at IS NULL THEN holds.estimated_won ELSE 0 END,
             coalesce(holds.pending_won, 0), 0
      FROM request_holds holds
      UNION ALL
      SELECT reserves.key_id, reserves.month, reserves.reserved_won, 0, 0
      FROM swept_hold_reserves reserves WHERE reserves.reserved_until > now()
    ) parts
    GROUP BY parts.key_id, parts.month;
  `,
};
