import type { DeclaredFunction, DeclaredTrigger } from "../../../database/declared-schema";

/**
 * The inline read models moved by every append, in the appending transaction, whatever path appended: the
 * account's funds (account-funds-logged.ts), the open holds, and each key's spend, request window and limits.
 * A statement trigger, so a batch moves each row once.
 *
 * A hold appended with its settlement in one statement (the settled-holds log writer's batches, see
 * ../holds/request-holds.ts) moves the settled rows only: its hold and its release net there, as the fold nets
 * them, and the authorized rows — which holds lock — are not touched, so a logged batch never waits for a
 * hold nor makes one wait. A hold appended alone (by an earlier release) moves the authorized rows and is open
 * until its settlement.
 */
/** The streams whose settlement this statement appended (a hold among them is settled in the same batch). */
const settledHere =
  "SELECT settled.stream_id FROM inserted settled WHERE settled.type IN ('UsageRecorded', 'UsageVoided')";

export const ledgerApplyFundsFunction: DeclaredFunction = {
  kind: "function",
  name: "ledger_apply_funds",
  sql: `
    CREATE OR REPLACE FUNCTION ledger_apply_funds() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      kinds text[];
      holds_alone boolean := false;
    BEGIN
      -- data is json (text): each data->>'field' parses the whole event again, so each statement reads an
      -- event's fields with one json_to_record (a hold's fields read field by field parsed it a dozen times).
      -- One pass over the statement's events for the kinds it appended, so that only the statements of those
      -- kinds run below: an append of charges moves two read models, not eight (an empty statement still
      -- costs its executor's start, and a DELETE's plan over an unknown transition table may scan).
      SELECT array_agg(DISTINCT type) INTO kinds FROM inserted;
      IF 'UsageAuthorized' = ANY (kinds) THEN
        holds_alone := EXISTS (SELECT 1 FROM inserted hold
          WHERE hold.type = 'UsageAuthorized' AND hold.stream_id NOT IN (${settledHere}));
      END IF;

      IF holds_alone THEN
        -- Holds appended alone: only an earlier release's hold statement appended them, under these rows' locks.
        INSERT INTO account_funds_authorized AS authorized (account_kind, account_id, authorized_won)
        SELECT hold.account->>'kind', hold.account->>'id', sum(hold."holdWon")
        FROM inserted CROSS JOIN LATERAL json_to_record(inserted.data) AS hold(account json, "holdWon" numeric)
        WHERE inserted.type = 'UsageAuthorized' AND inserted.stream_id NOT IN (${settledHere})
        GROUP BY 1, 2 ORDER BY 1, 2
        ON CONFLICT (account_kind, account_id) DO UPDATE SET
          authorized_won = authorized.authorized_won + excluded.authorized_won;
      END IF;

      IF kinds && ARRAY['CreditToppedUp', 'UsageVoided', 'UsageRecorded', 'UsageCharged'] THEN
        INSERT INTO account_funds_settled AS funds (account_kind, account_id, balance_won, held_won, pending_won)
        SELECT moved.account_kind, moved.account_id, sum(moved.balance_won), sum(moved.held_won), sum(moved.pending_won)
        FROM inserted CROSS JOIN LATERAL ledger_funds_moved(inserted.type, inserted.data) moved
        WHERE inserted.type IN ('CreditToppedUp', 'UsageVoided', 'UsageRecorded', 'UsageCharged')
           OR (inserted.type = 'UsageAuthorized' AND inserted.stream_id IN (${settledHere}))
        GROUP BY moved.account_kind, moved.account_id
        -- Rows are locked in this order: two statements touching the same accounts cannot deadlock.
        ORDER BY moved.account_kind, moved.account_id
        ON CONFLICT (account_kind, account_id) DO UPDATE SET
          balance_won = funds.balance_won + excluded.balance_won,
          held_won = funds.held_won + excluded.held_won,
          pending_won = funds.pending_won + excluded.pending_won;
      END IF;

      -- Holds alone on the authorized rows (under the account's authorized lock), the rest on the settled ones.
      IF holds_alone THEN
        INSERT INTO key_spend_authorized AS spend (key_id, month, authorized_won)
        SELECT movement.key_id, movement.month, sum(movement.held_won)
        FROM inserted CROSS JOIN LATERAL ledger_key_spend_movement(inserted.type, inserted.data, NULL) movement
        WHERE inserted.type = 'UsageAuthorized' AND inserted.stream_id NOT IN (${settledHere})
          AND movement.key_id IS NOT NULL
        GROUP BY movement.key_id, movement.month
        ORDER BY movement.key_id, movement.month
        ON CONFLICT (key_id, month) DO UPDATE SET authorized_won = spend.authorized_won + excluded.authorized_won;
      END IF;

      IF kinds && ARRAY['UsageVoided', 'UsageRecorded', 'UsageCharged'] THEN
        INSERT INTO key_spend_settled AS spend (key_id, month, held_won, pending_won, charged_won)
        SELECT movement.key_id, movement.month, sum(movement.held_won), sum(movement.pending_won),
               sum(movement.charged_won)
        FROM inserted
        -- A void names neither key nor start: its authorization's data, looked up by the unique index for voids
        -- alone. LIMIT keeps the lookup a probe per void (flattened into a join, the planner may scan the whole
        -- log), and a column, not a sub-select, as the argument lets the planner inline the movement (with a
        -- sub-select among its arguments it runs as a function call per event, several times dearer).
        LEFT JOIN LATERAL (
          SELECT held.data FROM ledger_events held
          WHERE inserted.type = 'UsageVoided' AND held.stream_id = inserted.stream_id
            AND held.stream_version = 0 AND held.type = 'UsageAuthorized'
          LIMIT 1
        ) authorization_event ON true
        CROSS JOIN LATERAL ledger_key_spend_movement(inserted.type, inserted.data, authorization_event.data) movement
        WHERE (inserted.type IN ('UsageVoided', 'UsageRecorded', 'UsageCharged')
               OR (inserted.type = 'UsageAuthorized' AND inserted.stream_id IN (${settledHere})))
          AND movement.key_id IS NOT NULL
        GROUP BY movement.key_id, movement.month
        ORDER BY movement.key_id, movement.month
        ON CONFLICT (key_id, month) DO UPDATE SET
          held_won = spend.held_won + excluded.held_won,
          pending_won = spend.pending_won + excluded.pending_won,
          charged_won = spend.charged_won + excluded.charged_won;
      END IF;

      IF 'UsageAuthorized' = ANY (kinds) THEN
        INSERT INTO key_request_windows AS requests_window (key_id, window_start, requests)
        SELECT held.key_id, held.minute, count(*)
        FROM (
          SELECT hold.key_id, hold.minute, max(hold.minute) OVER (PARTITION BY hold.key_id) AS latest
          FROM inserted CROSS JOIN LATERAL ledger_hold_minute(inserted.data, inserted.metadata) hold
          WHERE inserted.type = 'UsageAuthorized'
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
      END IF;

      IF 'ApiKeyLimitsSet' = ANY (kinds) THEN
        INSERT INTO key_limits AS limits (key_id, monthly_spend_limit_won, total_spend_limit_won,
                                          rate_limit_requests_per_minute, allowed_models)
        SELECT DISTINCT ON (inserted.data->>'keyId')
               (inserted.data->>'keyId')::uuid, (inserted.data->>'monthlySpendLimitWon')::numeric,
               (inserted.data->>'totalSpendLimitWon')::numeric, (inserted.data->>'rateLimitRequestsPerMinute')::integer,
               ledger_allowed_models_of(inserted.data)
        FROM inserted WHERE inserted.type = 'ApiKeyLimitsSet'
        ORDER BY inserted.data->>'keyId', inserted.stream_version DESC
        ON CONFLICT (key_id) DO UPDATE SET
          monthly_spend_limit_won = excluded.monthly_spend_limit_won,
          total_spend_limit_won = excluded.total_spend_limit_won,
          rate_limit_requests_per_minute = excluded.rate_limit_requests_per_minute,
          allowed_models = excluded.allowed_models;
      END IF;

      IF holds_alone THEN
        INSERT INTO open_holds (request_id, account_kind, account_id, held_won, gateway_instance, placed_at, expires_at)
        SELECT hold."requestId", hold.account->>'kind', hold.account->>'id', hold."holdWon", hold."gatewayInstance",
               hold."startedAt", hold."expiresAt"
        FROM inserted CROSS JOIN LATERAL json_to_record(inserted.data) AS hold("requestId" text, account json,
          "holdWon" numeric, "gatewayInstance" text, "startedAt" timestamptz, "expiresAt" timestamptz)
        WHERE inserted.type = 'UsageAuthorized' AND inserted.stream_id NOT IN (${settledHere});
      END IF;
      IF kinds && ARRAY['UsageRecorded', 'UsageVoided'] THEN
        -- The ids as one array: probes of the primary key, whatever the planner guesses of the transition table.
        DELETE FROM open_holds
        WHERE request_id = ANY (ARRAY(
          SELECT data->>'requestId' FROM inserted WHERE type IN ('UsageRecorded', 'UsageVoided')));
      END IF;
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
