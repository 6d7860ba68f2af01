import { randomUUID } from "node:crypto";
import type pg from "pg";
import { alertThresholdsTable, webhookEndpointsTable } from "../../../projections/alert-settings";
import { advisoryLockKeys } from "../../database/advisory-lock-keys";
import { inOneTransaction } from "../../database/in-one-transaction";
import { assert } from "../../kernel/assert";
import { webhookLimits } from "../../kernel/limits";
import type { AccountReference, WebhookEventType } from "../../ledger/events";
import type { EndpointSecrets } from "./webhook-signing";

/**
 * The webhook outbox (src/ledger/schema/webhooks/webhook-deliveries.ts): messages written once per endpoint,
 * leased by a worker, marked delivered or rescheduled. Everything here is one statement, but for a test
 * message's count and add, which take turns per endpoint, and a lease, which takes turns between workers.
 */

export type MessageType = WebhookEventType | "webhook.test";

export interface OutboxMessage extends EndpointSecrets {
  deliveryId: string;
  webhookId: string;
  url: string;
  body: string;
  attempts: number;
  createdAt: Date;
}

/** `{ type, timestamp, data }`, as signed and sent. */
export function messageBody(type: MessageType, at: Date, data: Record<string, unknown>): string {
  const body = JSON.stringify({ type, timestamp: at.toISOString(), data });
  assert(
    Buffer.byteLength(body) <= webhookLimits.bodyBytesMax,
    `webhook body over ${webhookLimits.bodyBytesMax} bytes`,
  );
  return body;
}

/**
 * A message of `type` for every endpoint of the account subscribed to it; with a `dedupeKey`, at most one per
 * endpoint and key however often it is asked. Answers how many were written.
 */
export async function enqueueAlert(
  database: Pick<pg.ClientBase, "query">,
  alert: {
    account: AccountReference;
    type: WebhookEventType;
    data: Record<string, unknown>;
    at: Date;
    dedupeKey?: string;
  },
): Promise<number> {
  const body = messageBody(alert.type, alert.at, alert.data);
  const result = await database.query(
    `INSERT INTO webhook_deliveries (delivery_id, webhook_id, event_type, body, dedupe_key)
     SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), webhook_id, $3, $4, $5
     FROM ${webhookEndpointsTable.name}
     WHERE account_kind = $1 AND account_id = $2 AND events::jsonb ? $3
     ON CONFLICT (webhook_id, dedupe_key) DO NOTHING`,
    [alert.account.kind, alert.account.id, alert.type, body, alert.dedupeKey ?? null],
  );
  return result.rowCount ?? 0;
}

/**
 * A test message for one endpoint (`POST /llm/webhooks/{id}/test`), unless `webhookLimits.pendingTestMessagesMax` of its test messages still
 * wait for delivery: every message is retried for a day, from one outbox all accounts share, so a loop of
 * test requests to an endpoint that does not answer must not fill it. Null when refused.
 */
export async function enqueueTestMessage(
  database: Pick<pg.Pool, "connect">,
  webhookId: string,
  at: Date,
): Promise<string | null> {
  const deliveryId = `msg_${randomUUID().replaceAll("-", "")}`;
  const body = messageBody("webhook.test", at, { webhookId });
  const client = await database.connect();
  try {
    return await inOneTransaction(client, async () => {
      // One endpoint's test messages are counted and added in turns: counted at once, each would see the
      // waiting messages of before and all would pass the bound.
      await client.query("SELECT pg_advisory_xact_lock($1::int, hashtext($2))", [
        advisoryLockKeys.webhookTestMessages,
        webhookId,
      ]);
      const result = await client.query<{ delivery_id: string }>(
        `INSERT INTO webhook_deliveries (delivery_id, webhook_id, event_type, body)
         SELECT $1, $2, 'webhook.test', $3
         WHERE (SELECT count(*) FROM webhook_deliveries
                WHERE webhook_id = $2 AND event_type = 'webhook.test' AND status = 'pending') < $4
         RETURNING delivery_id`,
        [deliveryId, webhookId, body, webhookLimits.pendingTestMessagesMax],
      );
      return result.rows[0]?.delivery_id ?? null;
    });
  } finally {
    client.release();
  }
}

/**
 * Leases up to `count` due messages of endpoints that still exist, for `leaseMs`, to `owner`, fairly: no
 * account gets more than `perAccountMax` attempts in flight across all workers (rows leased and not yet
 * recorded), and the slots go round the accounts — each account's next message before any account's one
 * after — so one account's hanging receivers hold up nobody else's messages. Within an account, its
 * endpoints take turns the same way, so its healthy endpoint is not held behind its hanging one. A message
 * of a removed endpoint is never chosen, so such messages cannot take every slot of a pass from live ones.
 * Workers lease in turns (an advisory lock), so each counts the attempts in flight with the others' leases in.
 */
export async function leaseDueMessages(
  database: Pick<pg.Pool, "connect">,
  owner: string,
  lease: { count: number; leaseMs: number; perAccountMax: number },
): Promise<OutboxMessage[]> {
  assert(lease.perAccountMax >= 1, "an account may have one attempt in flight at least");
  const client = await database.connect();
  try {
    const result = await inOneTransaction(client, async () => {
      await client.query("SELECT pg_advisory_xact_lock($1)", [advisoryLockKeys.webhookLeases]);
      return client.query<LeasedRow>(leaseDueMessagesSql, [
        owner,
        lease.count,
        lease.leaseMs,
        lease.perAccountMax,
      ]);
    });
    return result.rows.map((row) => ({
      deliveryId: row.delivery_id,
      webhookId: row.webhook_id,
      url: row.url,
      secret: row.secret,
      previousSecret:
        row.previous_secret === null || row.previous_secret_valid_until === null
          ? null
          : { secret: row.previous_secret, validUntil: row.previous_secret_valid_until },
      body: row.body,
      attempts: row.attempts,
      createdAt: row.created_at,
    }));
  } finally {
    client.release();
  }
}

interface LeasedRow {
  delivery_id: string;
  webhook_id: string;
  url: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_valid_until: Date | null;
  body: string;
  attempts: number;
  created_at: Date;
}

/**
 * $1 owner, $2 count, $3 lease in ms, $4 attempts in flight per account at most. A row in flight is a due one
 * (a lease leaves `next_attempt_at` as it was) whose lease has not lapsed. Its cost is one pass over the due
 * rows (grouped by endpoint, not sorted), one sort of the endpoints with due rows by account, and index probes
 * for the next `count` accounts' endpoints only: an account further down the order has none of the first
 * `count` turns, as each account before it has a turn before its first.
 */
const leaseDueMessagesSql = `
  WITH due_endpoints AS (
    SELECT delivery.webhook_id,
      count(*) FILTER (WHERE delivery.leased_until >= now()) AS in_flight,
      min(delivery.next_attempt_at) FILTER (WHERE delivery.leased_until IS NULL OR delivery.leased_until < now())
        AS oldest_waiting_at
    FROM webhook_deliveries delivery
    WHERE delivery.status = 'pending' AND delivery.next_attempt_at <= now()
    GROUP BY delivery.webhook_id),
  live_endpoints AS (
    SELECT due.*, endpoint.account_kind, endpoint.account_id
    FROM due_endpoints due
    JOIN ${webhookEndpointsTable.name} endpoint ON endpoint.webhook_id = due.webhook_id
    WHERE EXISTS (SELECT FROM webhook_secrets secret WHERE secret.webhook_id = due.webhook_id)),
  -- Each account's attempts in flight and when its next message (its least busy endpoint's oldest) waits from.
  account_heads AS (
    SELECT DISTINCT ON (live.account_kind, live.account_id) live.account_kind, live.account_id,
      (sum(live.in_flight) OVER account)::bigint AS account_in_flight, live.oldest_waiting_at AS next_waiting_at
    FROM live_endpoints live
    WINDOW account AS (PARTITION BY live.account_kind, live.account_id
      ORDER BY live.oldest_waiting_at IS NULL, live.in_flight, live.oldest_waiting_at
      ROWS BETWEEN UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING)
    ORDER BY live.account_kind, live.account_id, live.oldest_waiting_at IS NULL, live.in_flight,
      live.oldest_waiting_at),
  next_accounts AS (
    SELECT account_kind, account_id, account_in_flight AS in_flight FROM account_heads
    WHERE account_in_flight < $4 AND next_waiting_at IS NOT NULL
    ORDER BY account_in_flight, next_waiting_at LIMIT $2),
  -- Their waiting messages, oldest first per endpoint, as many as the account has room for.
  waiting AS (
    SELECT message.delivery_id, message.next_attempt_at, account.account_kind, account.account_id,
      account.in_flight AS account_in_flight, live.in_flight + message.endpoint_rank AS endpoint_turn
    FROM next_accounts account
    JOIN live_endpoints live ON live.account_kind = account.account_kind AND live.account_id = account.account_id
    CROSS JOIN LATERAL (
      SELECT delivery.delivery_id, delivery.next_attempt_at,
        row_number() OVER (ORDER BY delivery.next_attempt_at, delivery.delivery_id) AS endpoint_rank
      FROM webhook_deliveries delivery
      WHERE delivery.webhook_id = live.webhook_id AND delivery.status = 'pending'
        AND delivery.next_attempt_at <= now()
        AND (delivery.leased_until IS NULL OR delivery.leased_until < now())
      ORDER BY delivery.next_attempt_at, delivery.delivery_id LIMIT $4 - account.in_flight) message
    WHERE live.oldest_waiting_at IS NOT NULL),
  -- An account's turns: its attempts in flight, then its messages, its endpoints taking turns.
  turns AS (
    SELECT delivery_id, next_attempt_at,
      account_in_flight + row_number() OVER (PARTITION BY account_kind, account_id
        ORDER BY endpoint_turn, next_attempt_at, delivery_id) AS account_turn
    FROM waiting),
  first_turns AS (
    SELECT delivery_id, account_turn, next_attempt_at FROM turns WHERE account_turn <= $4
    ORDER BY account_turn, next_attempt_at, delivery_id LIMIT $2),
  chosen AS (
    SELECT delivery.delivery_id FROM first_turns turn
    JOIN webhook_deliveries delivery ON delivery.delivery_id = turn.delivery_id
    WHERE delivery.status = 'pending' AND delivery.next_attempt_at <= now()
      AND (delivery.leased_until IS NULL OR delivery.leased_until < now())
    FOR UPDATE OF delivery SKIP LOCKED)
  UPDATE webhook_deliveries delivery
  SET leased_until = now() + make_interval(secs => $3::double precision / 1000), lease_owner = $1
  FROM chosen, webhook_secrets secret, ${webhookEndpointsTable.name} endpoint
  WHERE delivery.delivery_id = chosen.delivery_id AND secret.webhook_id = delivery.webhook_id
    AND endpoint.webhook_id = delivery.webhook_id
  RETURNING delivery.delivery_id, delivery.webhook_id, endpoint.url, secret.secret, secret.previous_secret,
    secret.previous_secret_valid_until, delivery.body, delivery.attempts, delivery.created_at`;

/** Records an attempt's end, if `owner` still holds the lease (a lapsed lease's row is someone else's now). */
export async function recordAttempt(
  database: Pick<pg.Pool, "query">,
  owner: string,
  message: OutboxMessage,
  result:
    | { delivered: true; responseStatus: number }
    | { delivered: false; responseStatus: number | null; error: string; nextAttemptAt: Date | null },
): Promise<void> {
  if (result.delivered) {
    await database.query(
      `UPDATE webhook_deliveries SET status = 'delivered', attempts = attempts + 1, delivered_at = now(),
         last_response_status = $3, last_error = NULL, leased_until = NULL
       WHERE delivery_id = $1 AND lease_owner = $2 AND status = 'pending'`,
      [message.deliveryId, owner, result.responseStatus],
    );
    return;
  }
  await database.query(
    `UPDATE webhook_deliveries SET attempts = attempts + 1, last_response_status = $3, last_error = $4,
       status = CASE WHEN $5::timestamptz IS NULL THEN 'failed' ELSE 'pending' END,
       next_attempt_at = coalesce($5::timestamptz, next_attempt_at), leased_until = NULL
     WHERE delivery_id = $1 AND lease_owner = $2 AND status = 'pending'`,
    [message.deliveryId, owner, result.responseStatus, result.error.slice(0, 500), result.nextAttemptAt],
  );
}

/** An attempt its worker stopped before it ended: due again at once, not counted as an attempt. */
export async function releaseLease(database: Pick<pg.Pool, "query">, owner: string, message: OutboxMessage) {
  await database.query(
    `UPDATE webhook_deliveries SET leased_until = NULL
     WHERE delivery_id = $1 AND lease_owner = $2 AND status = 'pending'`,
    [message.deliveryId, owner],
  );
}

/**
 * What a removal leaves when it was cut short (its projection wait timed out, or its process died between
 * the event and the cleanup): pending messages of endpoints no longer in the projection are cancelled, and
 * signing secrets of endpoints gone for longer than `secretsKeptMs` deleted. A message is only ever written
 * for an endpoint the projection shows, so one without it belongs to a removed endpoint; a secret is written
 * just before its endpoint's event, so only an old one without its endpoint is a removed endpoint's.
 */
export async function sweepRemovedEndpoints(
  database: Pick<pg.Pool, "query">,
  secretsKeptMs: number,
): Promise<{ cancelled: number; secretsDeleted: number }> {
  const cancelled = await database.query(
    `UPDATE webhook_deliveries delivery SET status = 'cancelled', leased_until = NULL
     WHERE delivery.status = 'pending'
       AND NOT EXISTS (SELECT FROM ${webhookEndpointsTable.name} endpoint WHERE endpoint.webhook_id = delivery.webhook_id)`,
  );
  const secrets = await database.query(
    `DELETE FROM webhook_secrets secret
     WHERE secret.created_at < now() - make_interval(secs => $1::double precision / 1000)
       AND NOT EXISTS (SELECT FROM ${webhookEndpointsTable.name} endpoint WHERE endpoint.webhook_id = secret.webhook_id)`,
    [secretsKeptMs],
  );
  return { cancelled: cancelled.rowCount ?? 0, secretsDeleted: secrets.rowCount ?? 0 };
}

/**
 * Secrets a rotation replaced whose day beside the new one is over are deleted: they sign nothing any more
 * (`signingSecretsAt`), and a secret that leaked is not kept for nothing. Answers how many were.
 */
export async function forgetRetiredSecrets(database: Pick<pg.Pool, "query">): Promise<number> {
  const result = await database.query(
    `UPDATE webhook_secrets SET previous_secret = NULL, previous_secret_valid_until = NULL
     WHERE previous_secret_valid_until <= now()`,
  );
  return result.rowCount ?? 0;
}

/** Pending messages of a removed endpoint are not sent. */
export async function cancelPendingMessages(database: Pick<pg.Pool, "query">, webhookId: string) {
  await database.query(
    `UPDATE webhook_deliveries SET status = 'cancelled' WHERE webhook_id = $1 AND status = 'pending'`,
    [webhookId],
  );
}

export interface DeliveryView {
  id: string;
  type: string;
  status: string;
  attempts: number;
  createdAt: string;
  nextAttemptAt: string | null;
  deliveredAt: string | null;
  lastResponseStatus: number | null;
  lastError: string | null;
}

export async function listDeliveries(
  database: Pick<pg.Pool, "query">,
  webhookId: string,
): Promise<DeliveryView[]> {
  const result = await database.query<{
    delivery_id: string;
    event_type: string;
    status: string;
    attempts: number;
    created_at: Date;
    next_attempt_at: Date;
    delivered_at: Date | null;
    last_response_status: number | null;
    last_error: string | null;
  }>(
    `SELECT delivery_id, event_type, status, attempts, created_at, next_attempt_at, delivered_at,
       last_response_status, last_error
     FROM webhook_deliveries WHERE webhook_id = $1 ORDER BY created_at DESC, delivery_id LIMIT $2`,
    [webhookId, webhookLimits.deliveriesListedMax],
  );
  return result.rows.map((row) => ({
    id: row.delivery_id,
    type: row.event_type,
    status: row.status,
    attempts: row.attempts,
    createdAt: row.created_at.toISOString(),
    nextAttemptAt: row.status === "pending" ? row.next_attempt_at.toISOString() : null,
    deliveredAt: row.delivered_at?.toISOString() ?? null,
    lastResponseStatus: row.last_response_status,
    lastError: row.last_error,
  }));
}

/** Where a low-funds pass starts: after this account in (kind, id) order; null: from the first. */
export type BalanceCheckCursor = { kind: string; id: string } | null;

/**
 * One pass of low-funds detection (C14, `balance.low` once per crossing): for up to `accountsMax` accounts with
 * a threshold after `after` in (kind, id) order, compares what they have available (C10: balance − pending −
 * open holds) with it, in one statement: an account newly below gets one message per subscribed endpoint and is
 * marked below; one at or above its threshold again is marked not below (armed for the next crossing). Answers
 * the accounts alerted and where the next pass starts: after the last account checked, or from the first again
 * (null) once the pass reached the end, so that passes in turn check every account with a threshold.
 */
export async function detectLowBalances(
  database: Pick<pg.Pool, "query">,
  at: Date,
  accountsMax: number,
  after: BalanceCheckCursor = null,
): Promise<{ alerted: number; next: BalanceCheckCursor }> {
  const result = await database.query<{
    alerted: string;
    checked: string;
    last_kind: string | null;
    last_id: string | null;
  }>(
    `WITH observed AS (
       SELECT threshold.account_kind, threshold.account_id, threshold.balance_below_won,
         funds.balance_won - funds.pending_won - funds.held_won AS available_won,
         funds.balance_won - funds.pending_won - funds.held_won < threshold.balance_below_won AS below,
         coalesce(state.below, false) AS was_below
       FROM ${alertThresholdsTable.name} threshold
       JOIN account_funds funds ON funds.account_kind = threshold.account_kind
         AND funds.account_id = threshold.account_id
       LEFT JOIN alert_balance_states state ON state.account_kind = threshold.account_kind
         AND state.account_id = threshold.account_id
       WHERE threshold.balance_below_won IS NOT NULL
         AND ($4::text IS NULL OR (threshold.account_kind, threshold.account_id) > ($4::text, $5::text))
       ORDER BY threshold.account_kind, threshold.account_id LIMIT $1),
     changed AS (
       INSERT INTO alert_balance_states AS state (account_kind, account_id, below, changed_at)
       SELECT account_kind, account_id, below, $2 FROM observed WHERE below <> was_below
       ON CONFLICT (account_kind, account_id) DO UPDATE SET below = excluded.below, changed_at = excluded.changed_at
         WHERE state.below <> excluded.below
       RETURNING account_kind, account_id, below),
     alerted AS (
       INSERT INTO webhook_deliveries (delivery_id, webhook_id, event_type, body)
       SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), endpoint.webhook_id, 'balance.low',
         json_build_object('type', 'balance.low', 'timestamp', $3::text, 'data', json_build_object(
           'account', json_build_object('kind', observed.account_kind, 'id', observed.account_id),
           'availableWon', trim_scale(observed.available_won)::text,
           'balanceBelowWon', trim_scale(observed.balance_below_won)::text))::text
       FROM changed
       JOIN observed USING (account_kind, account_id)
       JOIN ${webhookEndpointsTable.name} endpoint ON endpoint.account_kind = changed.account_kind
         AND endpoint.account_id = changed.account_id AND endpoint.events::jsonb ? 'balance.low'
       WHERE changed.below
       RETURNING 1),
     last AS (
       SELECT account_kind, account_id FROM observed ORDER BY account_kind DESC, account_id DESC LIMIT 1)
     SELECT (SELECT count(*) FROM changed WHERE below)::text AS alerted, (SELECT count(*) FROM alerted) AS messages,
       (SELECT count(*) FROM observed)::text AS checked,
       (SELECT account_kind FROM last) AS last_kind, (SELECT account_id FROM last) AS last_id`,
    [accountsMax, at, at.toISOString(), after?.kind ?? null, after?.id ?? null],
  );
  const row = result.rows[0];
  const full = Number(row?.checked ?? 0) >= accountsMax;
  return {
    alerted: Number(row?.alerted ?? 0),
    next:
      full && row?.last_kind != null && row.last_id != null ? { kind: row.last_kind, id: row.last_id } : null,
  };
}
