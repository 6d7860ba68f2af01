import { randomUUID } from "node:crypto";
import type { Pool } from "pg";
import { alertSettingsProjection, webhookEndpointsTable } from "../../../projections/alert-settings";
import { KeyedTurns } from "../../kernel/keyed-turns";
import { webhookLimits } from "../../kernel/limits";
import type {
  AccountReference,
  ChangeAuthorization,
  EventMetadata,
  LedgerEvent,
  WebhookEventType,
} from "../../ledger/events";
import type { ProjectionWaiter } from "../../ledger/projection/projection-waiter";
import { readBackAnsweringSecret, readBackRecorded } from "../../ledger/projection/recorded-not-visible";
import { StreamCommands } from "../../ledger/store/conflict-retry";
import { type EventStore, WrongExpectedVersionError } from "../../ledger/store/event-store";
import { assertDeliverableUrl, WebhookAddressRefusedError } from "./webhook-address";
import {
  cancelPendingMessages,
  type DeliveryView,
  enqueueTestMessage,
  listDeliveries,
} from "./webhook-outbox";
import { replaceWebhookSecret } from "./webhook-secret-rotation";
import { newWebhookSecret } from "./webhook-signing";

/**
 * Alerts and webhook endpoints of an account (C14): each change an event in the log (`AlertThresholdSet`,
 * `WebhookEndpointAdded`, `WebhookEndpointRemoved`, `WebhookSecretRotated`), answered once the alert-settings
 * projection has it (a rotation, which changes nothing it shows, once its secret is in force). Who may act for
 * which account is the edge's to decide (roles); this only acts.
 */

export interface WebhookEndpoint {
  id: string;
  url: string;
  events: WebhookEventType[];
  isOrganization: boolean;
  createdAt: string;
}

/** A rotation's answer: the endpoint and its new secret, shown this once. */
export interface RotatedWebhookSecret {
  id: string;
  secret: string;
}

interface Dependencies {
  pool: Pool;
  store: EventStore;
  waiter: Pick<ProjectionWaiter, "waitFor">;
  projectionWaitTimeoutMs: number;
  allowPrivateNetworks: boolean;
  now?: () => Date;
}

/** Too many endpoints, or a refused URL: 400/100 at the edge. */
export class WebhookRequestError extends Error {
  override readonly name = "WebhookRequestError";
}

/** The endpoint was removed while the change waited: 404 at the edge, as for one never added. */
export class WebhookNotFoundError extends Error {
  override readonly name = "WebhookNotFoundError";
}

export class AlertService {
  private readonly now: () => Date;
  private readonly addTurns = new KeyedTurns();
  private readonly commands = new StreamCommands();

  constructor(private readonly dependencies: Dependencies) {
    this.now = dependencies.now ?? (() => new Date());
  }

  /**
   * `authorize` (whether the actor may, which the edge decides) runs in the stream's turn right before the
   * append, as in every change here: a change that waited for others is judged when it is made.
   */
  async setThreshold(
    account: AccountReference,
    balanceBelowWon: string | null,
    actor: string,
    correlationId: string,
    authorize: ChangeAuthorization = async () => undefined,
  ) {
    await this.append(
      `alerts-${account.kind}-${account.id}`,
      {
        type: "AlertThresholdSet",
        data: { account, balanceBelowWon },
        metadata: this.metadata(actor, correlationId),
      },
      { authorize },
    );
    return { account, balanceBelowWon };
  }

  async thresholdOf(account: AccountReference): Promise<string | null> {
    const result = await this.dependencies.pool.query<{ balance_below_won: string | null }>(
      "SELECT balance_below_won FROM projection_alert_thresholds WHERE account_kind = $1 AND account_id = $2",
      [account.kind, account.id],
    );
    return result.rows[0]?.balance_below_won ?? null;
  }

  /**
   * Adds an endpoint; answers it with its secret, the only time the secret is shown. `authorize` (whether the
   * actor may, which the edge decides) runs again in the account's turn, right before the add: an add that
   * waited for others is judged when it is made.
   */
  async addWebhook(
    account: AccountReference,
    request: { url: string; events: WebhookEventType[] },
    actor: string,
    correlationId: string,
    authorize: ChangeAuthorization = async () => undefined,
  ): Promise<WebhookEndpoint & { secret: string }> {
    try {
      await assertDeliverableUrl(request.url, this.dependencies.allowPrivateNetworks);
    } catch (error) {
      if (error instanceof WebhookAddressRefusedError) throw new WebhookRequestError(error.message);
      throw error;
    }
    // Counted and added in one turn per account, the add answered once the projection lists it: adds sent
    // at once would otherwise all count the endpoints before any of them landed, and all pass the bound (as
    // they may while the projection lags past the wait, when the add answers its secret all the same).
    // Another gateway process's adds still interleave with these, at most one per process at a time.
    return this.addTurns.run(`${account.kind}:${account.id}`, async () => {
      const basis = await authorize();
      if ((await this.list(account)).length >= webhookLimits.endpointsPerAccountMax)
        throw new WebhookRequestError(
          `an account has at most ${webhookLimits.endpointsPerAccountMax} webhooks`,
        );
      const webhookId = `wh_${randomUUID().replaceAll("-", "")}`;
      const secret = newWebhookSecret();
      // The secret first: an endpoint the log names always has one to sign with.
      await this.dependencies.pool.query("INSERT INTO webhook_secrets (webhook_id, secret) VALUES ($1, $2)", [
        webhookId,
        secret,
      ]);
      const events = [...new Set(request.events)];
      const metadata = { ...this.metadata(actor, correlationId), ...basis };
      await this.append(
        `webhook-${webhookId}`,
        { type: "WebhookEndpointAdded", data: { webhookId, account, url: request.url, events }, metadata },
        { answersASecret: true },
      );
      // As the projection lists it, told from the event: the answer does not wait on a read that may fail.
      const endpoint: WebhookEndpoint = {
        id: webhookId,
        url: request.url,
        events,
        isOrganization: account.kind === "organization",
        createdAt: metadata.occurredAt,
      };
      return { ...endpoint, secret };
    });
  }

  async list(account: AccountReference): Promise<WebhookEndpoint[]> {
    const result = await this.dependencies.pool.query<EndpointRow>(
      `SELECT webhook_id, account_kind, account_id, url, events, created_at FROM ${webhookEndpointsTable.name}
       WHERE account_kind = $1 AND account_id = $2 ORDER BY created_at DESC, webhook_id`,
      [account.kind, account.id],
    );
    return result.rows.map((row) => endpointOf(row).endpoint);
  }

  /** The endpoint and its account, if it exists. */
  async find(
    webhookId: string,
  ): Promise<{ endpoint: WebhookEndpoint; account: AccountReference } | undefined> {
    const result = await this.dependencies.pool.query<EndpointRow>(
      `SELECT webhook_id, account_kind, account_id, url, events, created_at FROM ${webhookEndpointsTable.name}
       WHERE webhook_id = $1`,
      [webhookId],
    );
    const row = result.rows[0];
    return row ? endpointOf(row) : undefined;
  }

  async removeWebhook(
    webhookId: string,
    account: AccountReference,
    actor: string,
    correlationId: string,
    authorize: ChangeAuthorization = async () => undefined,
  ) {
    // Its messages and secret go as soon as the removal is in the log, before the wait for the projection
    // (which may time out); what a crash in between leaves, the workers' sweep removes (webhook-outbox.ts).
    await this.append(
      `webhook-${webhookId}`,
      {
        type: "WebhookEndpointRemoved",
        data: { webhookId, account },
        metadata: this.metadata(actor, correlationId),
      },
      {
        authorize,
        thenAtOnce: async () => {
          await cancelPendingMessages(this.dependencies.pool, webhookId);
          await this.dependencies.pool.query("DELETE FROM webhook_secrets WHERE webhook_id = $1", [
            webhookId,
          ]);
        },
      },
    );
  }

  /**
   * Gives the endpoint a new signing secret and answers it, the only time it is shown. Deliveries from now on
   * (retries of earlier messages too) are signed with it and, for `webhookLimits.previousSecretValidMs`, with
   * the one it replaced, so receivers move over without a gap; a second rotation in that time retires the
   * first secret at once. The event goes first: a rotation that stops before its secret is written leaves
   * the old secret in force and answers an error, and rotating again is safe.
   */
  async rotateWebhookSecret(
    webhookId: string,
    account: AccountReference,
    actor: string,
    correlationId: string,
    authorize: ChangeAuthorization = async () => undefined,
  ): Promise<RotatedWebhookSecret> {
    const streamId = `webhook-${webhookId}`;
    return this.commands.decideAndAppend(streamId, async () => {
      const head = await this.dependencies.store.readLastEvent(streamId);
      if (head === undefined || head.type === "WebhookEndpointRemoved") throw new WebhookNotFoundError();
      const metadata = { ...this.metadata(actor, correlationId), ...(await authorize()) };
      const appended = await this.dependencies.store.append({
        streamId,
        expectedVersion: head.streamVersion,
        events: [
          {
            eventId: randomUUID(),
            event: { type: "WebhookSecretRotated", data: { webhookId, account }, metadata },
          },
        ],
      });
      const secret = newWebhookSecret();
      const replaced = await replaceWebhookSecret(this.dependencies.pool, webhookId, {
        secret,
        version: appended.streamVersion,
        previousValidUntil: new Date(Date.parse(metadata.occurredAt) + webhookLimits.previousSecretValidMs),
      });
      if (replaced === "gone") throw new WebhookNotFoundError();
      // Another process's later rotation wrote its secret first, so this one's never signs: decided again on
      // the stream as it is now, as when that rotation had been appended first.
      if (replaced === "superseded")
        throw new WrongExpectedVersionError(streamId, appended.streamVersion, appended.streamVersion + 1);
      return { id: webhookId, secret };
    });
  }

  deliveries(webhookId: string): Promise<DeliveryView[]> {
    return listDeliveries(this.dependencies.pool, webhookId);
  }

  /** The test message's id; null when the endpoint has too many waiting for delivery. */
  sendTest(webhookId: string): Promise<string | null> {
    return enqueueTestMessage(this.dependencies.pool, webhookId, this.now());
  }

  /**
   * Authorizes and appends at the stream's version as read (another change landing first: both again), runs
   * `thenAtOnce` (if any), then waits until the projection shows the change.
   */
  private async append(
    streamId: string,
    event: LedgerEvent,
    options: {
      authorize?: ChangeAuthorization;
      thenAtOnce?: () => Promise<void>;
      /** The change's answer shows a secret once: it goes out even if the read models lag. */
      answersASecret?: boolean;
    } = {},
  ) {
    const appended = await this.commands.decideAndAppend(streamId, async () => {
      const head = await this.dependencies.store.readLastEvent(streamId);
      const basis = await options.authorize?.();
      const authorized = { ...event, metadata: { ...event.metadata, ...basis } } as LedgerEvent;
      return this.dependencies.store.append({
        streamId,
        expectedVersion: head?.streamVersion ?? "no-stream",
        events: [{ eventId: randomUUID(), event: authorized }],
      });
    });
    const readBack = options.answersASecret ? readBackAnsweringSecret : readBackRecorded;
    await readBack(async () => {
      await options.thenAtOnce?.();
      await this.dependencies.waiter.waitFor(
        appended.position,
        [alertSettingsProjection.name],
        this.dependencies.projectionWaitTimeoutMs,
      );
    });
  }

  private metadata(actor: string, correlationId: string): EventMetadata {
    return { actor, correlationId, occurredAt: this.now().toISOString() };
  }
}

type EndpointRow = {
  webhook_id: string;
  account_kind: "user" | "organization";
  account_id: string;
  url: string;
  events: WebhookEventType[];
  created_at: Date;
};

function endpointOf(row: EndpointRow) {
  return {
    account: { kind: row.account_kind, id: row.account_id },
    endpoint: {
      id: row.webhook_id,
      url: row.url,
      events: row.events,
      isOrganization: row.account_kind === "organization",
      createdAt: row.created_at.toISOString(),
    },
  };
}
