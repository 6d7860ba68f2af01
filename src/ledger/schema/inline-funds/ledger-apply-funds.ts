import type { DeclaredFunction, DeclaredTrigger } from "../../../database/declared-schema";

/**
 * The inline read models moved by every append, in the appending transaction, whatever path appended: the
 * account's funds (account-funds.ts), the open holds, and each key's spend, request window and limits. A
 * statement trigger, so a batch moves each row once. Holds go to the authorized rows (only
 * ledger_authorize_usage appends them, and it holds those rows' locks already), settlements to the settled
 * ones.
 */
export const ledgerApplyFundsFunction: DeclaredFunction = {
  kind: "function",
  name: "ledger_apply_funds",
  sql: `
    CREATE OR REPLACE FUNCTION ledger_apply_funds() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      -- Holds: only ledger_authorize_usage appends them, and it holds these rows' locks already.
      INSERT INTO account_funds_authorized AS authorized (account_kind, account_id, authorized_won)
      SELECT data->'account'->>'kind', data->'account'->>'id', sum((data->>'holdWon')::numeric)
      FROM inserted WHERE type = 'UsageAuthorized'
      GROUP BY 1, 2 ORDER BY 1, 2
      ON CONFLICT (account_kind, account_id) DO UPDATE SET
        authorized_won = authorized.authorized_won + excluded.authorized_won;

      INSERT INTO account_funds_settled AS funds (account_kind, account_id, balance_won, held_won, pending_won)
      SELECT moved.account_kind, moved.account_id, sum(moved.balance_won), sum(moved.held_won), sum(moved.pending_won)
      FROM inserted CROSS JOIN LATERAL ledger_funds_moved(inserted.type, inserted.data) moved
      WHERE inserted.type IN ('CreditToppedUp', 'UsageVoided', 'UsageRecorded', 'UsageCharged')
      GROUP BY moved.account_kind, moved.account_id
      -- Rows are locked in this order: two statements touching the same accounts cannot deadlock.
      ORDER BY moved.account_kind, moved.account_id
      ON CONFLICT (account_kind, account_id) DO UPDATE SET
        balance_won = funds.balance_won + excluded.balance_won,
        held_won = funds.held_won + excluded.held_won,
        pending_won = funds.pending_won + excluded.pending_won;

      -- Holds on the authorized rows (under the account's authorized lock), settlements on the settled ones.
      INSERT INTO key_spend_authorized AS spend (key_id, month, authorized_won)
      SELECT movement.key_id, movement.month, sum(movement.held_won)
      FROM inserted CROSS JOIN LATERAL ledger_key_spend_movement(inserted.type, inserted.data, NULL) movement
      WHERE inserted.type = 'UsageAuthorized' AND movement.key_id IS NOT NULL
      GROUP BY movement.key_id, movement.month
      ORDER BY movement.key_id, movement.month
      ON CONFLICT (key_id, month) DO UPDATE SET authorized_won = spend.authorized_won + excluded.authorized_won;

      INSERT INTO key_spend_settled AS spend (key_id, month, held_won, pending_won, charged_won)
      SELECT moved.key_id, moved.month, sum(moved.held_won), sum(moved.pending_won), sum(moved.charged_won)
      FROM (
        SELECT movement.*
        FROM inserted
        -- A void's authorization is looked up by the unique index for voids alone: a join would let the
        -- planner scan the whole log for every appending statement.
        CROSS JOIN LATERAL ledger_key_spend_movement(inserted.type, inserted.data,
          CASE WHEN inserted.type = 'UsageVoided' THEN (
            SELECT held.data FROM ledger_events held
            WHERE held.stream_id = inserted.stream_id AND held.stream_version = 0 AND held.type = 'UsageAuthorized')
          END) movement
        WHERE inserted.type IN ('UsageVoided', 'UsageRecorded', 'UsageCharged')
      ) moved
      WHERE moved.key_id IS NOT NULL
      GROUP BY moved.key_id, moved.month
      ORDER BY moved.key_id, moved.month
      ON CONFLICT (key_id, month) DO UPDATE SET
        held_won = spend.held_won + excluded.held_won,
        pending_won = spend.pending_won + excluded.pending_won,
        charged_won = spend.charged_won + excluded.charged_won;

      INSERT INTO key_request_windows AS requests_window (key_id, window_start, requests)
      SELECT held.key_id, held.minute, count(*)
      FROM (
        SELECT (inserted.data->>'keyId')::uuid AS key_id, date_trunc('minute', inserted.recorded_at) AS minute,
               max(date_trunc('minute', inserted.recorded_at)) OVER (PARTITION BY inserted.data->>'keyId') AS latest
        FROM inserted WHERE inserted.type = 'UsageAuthorized'
      ) held
      WHERE held.minute = held.latest
      GROUP BY held.key_id, held.minute
      ORDER BY held.key_id
      ON CONFLICT (key_id) DO UPDATE SET
        requests = CASE
          WHEN requests_window.window_start = excluded.window_start THEN requests_window.requests + excluded.requests
          WHEN requests_window.window_start > excluded.window_start THEN requests_window.requests
          ELSE excluded.requests END,
        window_start = greatest(requests_window.window_start, excluded.window_start);

      INSERT INTO key_limits AS limits (key_id, monthly_spend_limit_won, total_spend_limit_won,
                                        rate_limit_requests_per_minute)
      SELECT DISTINCT ON (inserted.data->>'keyId')
             (inserted.data->>'keyId')::uuid, (inserted.data->>'monthlySpendLimitWon')::numeric,
             (inserted.data->>'totalSpendLimitWon')::numeric, (inserted.data->>'rateLimitRequestsPerMinute')::integer
      FROM inserted WHERE inserted.type = 'ApiKeyLimitsSet'
      ORDER BY inserted.data->>'keyId', inserted.stream_version DESC
      ON CONFLICT (key_id) DO UPDATE SET
        monthly_spend_limit_won = excluded.monthly_spend_limit_won,
        total_spend_limit_won = excluded.total_spend_limit_won,
        rate_limit_requests_per_minute = excluded.rate_limit_requests_per_minute;

      INSERT INTO open_holds (request_id, account_kind, account_id, held_won, gateway_instance, placed_at, expires_at)
      SELECT data->>'requestId', data->'account'->>'kind', data->'account'->>'id', (data->>'holdWon')::numeric,
             data->>'gatewayInstance', (data->>'startedAt')::timestamptz, (data->>'expiresAt')::timestamptz
      FROM inserted WHERE type = 'UsageAuthorized';
      DELETE FROM open_holds
      WHERE request_id IN (SELECT data->>'requestId' FROM inserted WHERE type IN ('UsageRecorded', 'UsageVoided'));
      RETURN NULL;
    END $$;
  `,
};

export const ledgerEventsFundsTrigger: DeclaredTrigger = {
  kind: "trigger",
  name: "ledger_events_funds",
  table: "ledger_events",
  sql: `
    CREATE OR REPLACE TRIGGER ledger_events_funds AFTER INSERT ON ledger_events
      REFERENCING NEW TABLE AS inserted FOR EACH STATEMENT EXECUTE FUNCTION ledger_apply_funds();
  `,
};
