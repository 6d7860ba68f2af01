import { createServer, type RequestListener, type Server, type ServerResponse } from "node:http";
import { setTimeout as sleep } from "node:timers/promises";
import express from "express";
import type { Logger } from "pino";
import { allProjections } from "../projections";
import { AlertService } from "./billing/alerts/alert-service";
import { KeyLimitAlerts } from "./billing/alerts/key-limit-alerts";
import { readAvailableWon } from "./billing/holds/account-available";
import { GatewayHeartbeat } from "./billing/holds/gateway-heartbeat";
import { GatewaySession } from "./billing/holds/gateway-session";
import { GenerationHolds } from "./billing/holds/generation-holds";
import { HoldAuthorizer } from "./billing/holds/hold-authorizer";
import { HoldPricing } from "./billing/holds/hold-pricing";
import { HoldProgress } from "./billing/holds/hold-progress";
import { HoldRowCompletion } from "./billing/holds/hold-row-completion";
import { HoldRowsVacuum } from "./billing/holds/hold-rows-vacuum";
import { PostgresUsageAuthorizations } from "./billing/holds/postgres-usage-authorizations";
import { SettledHoldsLog } from "./billing/holds/settled-holds-log";
import {
  assertSettlementTimings,
  holdConfirmationMaxAgeMs,
  type SettlementTimings,
} from "./billing/holds/settlement-timings";
import { SweptHoldReserves } from "./billing/holds/swept-hold-reserves";
import { UsageOutbox } from "./billing/holds/usage-outbox";
import type { ChargeEnqueuer } from "./billing/queue/charge-enqueuer";
import { ModelPriceList } from "./billing/read-models/model-price-list";
import { createPricingReadModel } from "./billing/read-models/pricing-read-model";
import { createActivityRouter } from "./gateway/account/activity-routes";
import { createReceiptRouter } from "./gateway/account/receipt-routes";
import { createUsageRouter } from "./gateway/account/usage-routes";
import { RequestLogWriter } from "./gateway/activity/request-log-writer";
import { createAdminActivityRouter } from "./gateway/admin/activity-routes";
import { createConsoleReadRouter } from "./gateway/admin/console-read-routes";
import { createAdminKeyLimitsRouter } from "./gateway/admin/key-limits-routes";
import { createUpstreamHealthRouter } from "./gateway/admin/upstream-routes";
import { createAdminUserAccessRouter } from "./gateway/admin/user-access-routes";
import { createAlertRouters } from "./gateway/alerts/alert-routes";
import { createApp } from "./gateway/app";
import { authenticateAdminOrConsole } from "./gateway/console/authenticate-admin-console";
import { ConsoleAuth } from "./gateway/console/console-auth";
import { createConsoleRouter } from "./gateway/console/console-router";
import { PostgresRedeemedSignInCodes } from "./gateway/console/redeemed-sign-in-codes";
import { AdmissionCache } from "./gateway/generation/admission-cache";
import { readAdmission } from "./gateway/generation/admission-read-model";
import { ApiKeyAdmission } from "./gateway/generation/api-key-admission";
import { chatCompletionsFormat } from "./gateway/generation/chat-completions-format";
import { createGenerationEndpoints } from "./gateway/generation/generation-endpoints";
import { RequestsInFlight } from "./gateway/generation/requests-in-flight";
import { responsesFormat } from "./gateway/generation/responses-format";
import {
  type FamilyUpstream,
  UpstreamRegistry,
  type UpstreamResilienceOptions,
} from "./gateway/generation/upstream-registry";
import { answerClientError } from "./gateway/http/client-error";
import { createKeyRouter } from "./gateway/keys/key-routes";
import { createOrganizationKeyDefaultsRouter } from "./gateway/keys/organization-key-defaults-routes";
import { createOrganizationMemberRouter } from "./gateway/keys/organization-member-routes";
import { createPlaygroundRouter } from "./gateway/keys/playground-routes";
import { createLedgerPublicRouter } from "./gateway/ledger/public-key-routes";
import { adminTokenMatcher, authenticateAdmin } from "./gateway/middleware/authenticate-admin";
import { authenticateSession } from "./gateway/middleware/authenticate-session";
import { createModelRouter } from "./gateway/models/model-routes";
import { createAdminSessionRouter } from "./gateway/sessions/admin-session-routes";
import { assert } from "./kernel/assert";
import { defaultSettlementTimings, limits } from "./kernel/limits";
import { errorSummaryOf, throttledLog } from "./kernel/throttled-log";
import { ApiKeyHasher } from "./keys/api-key-secret";
import { ApiKeyService } from "./keys/api-key-service";
import { OrganizationRoleService } from "./keys/organization-role-service";
import { accountsTouchedBy, accountsWithKeysChangedBy, pricingChangedBy } from "./ledger/events";
import { runCheckpointer } from "./ledger/integrity/ledger-checkpointer";
import type { LedgerSigningKey } from "./ledger/integrity/ledger-signing-key";
import { checkpointSignedByAnotherKey } from "./ledger/integrity/ledger-status";
import { addMissingColumnsAtStart } from "./ledger/projection/projection-columns-at-start";
import { ProjectionRunner } from "./ledger/projection/projection-runner";
import { ProjectionWaiter } from "./ledger/projection/projection-waiter";
import {
  untilProjectionsPrepared,
  untilProjectionTablesStand,
} from "./ledger/projection/projections-prepared";
import { StreamCommands } from "./ledger/store/conflict-retry";
import { type Ledger, openLedger } from "./ledger/store/open-ledger";
import { PostgresEventStore } from "./ledger/store/postgres-event-store";
import { upstreamMetrics } from "./operations/upstream-metrics";
import { findModel } from "./providers/catalog";
import type { UpstreamTimeouts } from "./providers/create-adapter";
import type { ModelFamily } from "./providers/provider";
import { PostgresEndedSessions } from "./sessions/ended-sessions";
import { type OidcSettings, OidcSignIn } from "./sessions/oidc-sign-in";
import { type Session, SessionTokens } from "./sessions/session-tokens";

/**
 * The service's parts, wired: ledger, projections, key management, generation and (when asked) the HTTP
 * server. `main.ts` feeds it configuration; tests start it the same way against their own database.
 */

export interface ServiceOptions {
  databaseUrl: string;
  eventStoreUrl?: string | undefined;
  sessionSecret: string;
  keyPepper: string;
  adminToken?: string | undefined;
  upstreams: Record<ModelFamily, FamilyUpstream>;
  /** Models with an upstream of their own (models file), by slug; the others use their family's. */
  modelUpstreams?: ReadonlyMap<string, FamilyUpstream>;
  upstreamTimeouts?: Partial<UpstreamTimeouts>;
  /** Models with several endpoints, and the retry and breaker limits (C13; docs/upstream-resilience.md). */
  upstreamResilience?: UpstreamResilienceOptions;
  charges: ChargeEnqueuer;
  requestBodyBytesMax: number;
  logger: Logger;
  /** Extra routers mounted next to the built-in ones (billing's admin and account routes). */
  adminRouter?: (parts: ServiceParts) => express.Router;
  accountRouter?: (parts: ServiceParts) => express.Router;
  /** /health, /metrics and the API description (src/operations), mounted at the root. */
  operationsRouter?: (parts: ServiceParts) => express.Router;
  applicationName?: string;
  /** The ledger pool's size (limits.databaseConnectionsMax by default); tests sharing a server use less. */
  databaseConnectionsMax?: number;
  /**
   * Whether this process takes part in running the projections (one process leads, the others stand by).
   * False for `--role=gateway`: the edge only appends and reads, and waits at start until a worker has
   * prepared the projections. Default true.
   */
  runProjections?: boolean;
  /** Aborted by a stop signal during start-up: ends the wait for a worker's projections (start fails). */
  startAborted?: AbortSignal;
  /**
   * Signs ledger checkpoints. Processes that run the projections also run the checkpointer (one leads);
   * without a key nothing is sealed.
   */
  ledgerSigningKey?: LedgerSigningKey | undefined;
  /** C10's timings (defaults: settlement-timings.ts); checked at start. Tests shorten them. */
  settlementTimings?: Partial<SettlementTimings>;
  /** Console sign-in by OpenID Connect (C14); absent: the console offers none. */
  oidc?: OidcSettings | undefined;
  /** Webhooks may go to loopback, private and link-local addresses (`WEBHOOK_ALLOW_PRIVATE_NETWORKS`). */
  webhookAllowPrivateNetworks?: boolean;
  /** `PUBLIC_URL`: the origin browsers reach the gateway at; absent: each request's own. */
  publicUrl?: URL | undefined;
}

/** Whether the process is stopping; readiness answers 503 from the moment it is (C11). */
export interface ServiceLifecycle {
  readonly draining: boolean;
}

export interface ServiceParts {
  lifecycle: ServiceLifecycle;
  ledger: Ledger;
  waiter: ProjectionWaiter;
  sessions: SessionTokens;
  keys: ApiKeyService;
  /** Roles in organizations (C14): one per process, so that grants on one organization take turns. */
  roles: OrganizationRoleService;
  /** The web console's cookies: CSRF tokens, the admin cookie, one-time sign-in links. */
  consoleAuth: ConsoleAuth;
  logger: Logger;
  /** The ledger signing key's public half, when configured: checkpoint signatures are checked against it. */
  ledgerPublicKey: Buffer | undefined;
}

export interface RunningService extends ServiceParts {
  /** The HTTP edge's request listener. */
  requestListener: RequestListener;
  /** Starts listening; resolves with the bound address. */
  listen(port: number, host: string): Promise<{ server: Server; url: string }>;
  /**
   * The first step of a clean stop: `lifecycle.draining` turns true, the server accepts no new connection,
   * requests in flight get the drain bound (`shutdownDrainMs`) to finish. Then those still running are cut
   * by the gateway — a stream gets its format's error event, a JSON request a 503 — and billed for what they
   * delivered (outcome `shutdown`); connections still open after that are closed. The usage they record is
   * in the ledger when this resolves. Answers how many requests had to be cut.
   */
  drain(): Promise<{ requestsCut: number }>;
  /** The timings in force (checked). */
  settlementTimings: SettlementTimings;
  /** Stops the projections and closes the server (if not drained), the waiter, upstreams and pools. */
  close(): Promise<void>;
}

/**
 * Starts every part of the service, in order: the ledger, the projections (or the wait for a worker to
 * prepare them), key admission, holds, the HTTP edge and its routers. Each step is a function below.
 */
export async function startService(options: ServiceOptions): Promise<RunningService> {
  const logger = options.logger;
  const timings = assertSettlementTimings({ ...defaultSettlementTimings, ...options.settlementTimings });
  const ledger = await openServiceLedger(options);
  await warnOfAnotherSigningKey(ledger, options.ledgerSigningKey, logger);
  const projections = await startProjections(options, ledger).catch(async (error: unknown) => {
    await ledger.close();
    throw error;
  });
  const waiter = new ProjectionWaiter(ledger.pool, options.databaseUrl, limits.projectionWaitPollIntervalMs, {
    logger,
  });
  await waiter.start();
  const hasher = new ApiKeyHasher(options.keyPepper);
  const endedSessions = new PostgresEndedSessions(ledger.pool);
  const sessions = new SessionTokens(
    options.sessionSecret,
    options.oidc?.roleClaim !== undefined,
    endedSessions,
  );
  // One set of turns per stream: grants and key defaults share the organization's stream.
  const commands = new StreamCommands();
  const roles = new OrganizationRoleService({
    pool: ledger.pool,
    store: ledger.store,
    waiter,
    projectionWaitTimeoutMs: limits.projectionWaitTimeoutMs,
    commands,
  });
  const keys = new ApiKeyService({
    pool: ledger.pool,
    store: ledger.store,
    waiter,
    hasher,
    organizationMembers: roles,
    projectionWaitTimeoutMs: limits.projectionWaitTimeoutMs,
    commands,
  });
  const admissionCache = startAdmissionCache(ledger, waiter, logger);
  const upstreams = new UpstreamRegistry(
    options.upstreams,
    options.upstreamTimeouts ?? {},
    options.modelUpstreams,
    { observer: upstreamMetrics, ...options.upstreamResilience },
  );
  const consoleAuth = new ConsoleAuth(
    options.sessionSecret,
    options.adminToken,
    new PostgresRedeemedSignInCodes(ledger.pool),
    endedSessions,
  );
  const parts: ServiceParts = {
    lifecycle: { draining: false },
    ledger,
    waiter,
    sessions,
    keys,
    roles,
    consoleAuth,
    logger,
    ledgerPublicKey: options.ledgerSigningKey?.publicKey,
  };
  const money = await startHolds(options, ledger, timings, waiter);
  const prices = modelPriceListOf(ledger, logger);
  const keyAdmission = new ApiKeyAdmission(
    admissionCache,
    hasher,
    options.adminToken ? adminTokenMatcher(options.adminToken) : undefined,
  );
  const generation = createGenerationEndpoints(
    {
      admission: keyAdmission,
      prices,
      upstreams,
      holds: money.holds,
      inFlight: money.inFlight,
      timings,
      logger,
    },
    { chatCompletions: chatCompletionsFormat, responses: responsesFormat },
    { requestBodyBytesMax: options.requestBodyBytesMax, logger },
  );
  const requestLog = startRequestLog(ledger, logger);
  const app = applicationOf(options, parts, { generation, prices, keyAdmission, upstreams, requestLog });
  return {
    ...parts,
    settlementTimings: timings,
    ...httpEdgeOf(app, parts.lifecycle, money, timings, logger, async () => {
      await money.progress.stop();
      await money.settledLog.close();
      await money.holdRowsVacuum.close();
      await requestLog.close();
      await money.heartbeat.stop();
      await money.session.stop();
      await money.keyLimitAlerts.close();
      admissionCache.stop();
      await projections.stop();
      await waiter.close();
      await upstreams.close();
      await ledger.close();
    }),
  };
}

function openServiceLedger(options: ServiceOptions): Promise<Ledger> {
  return openLedger({
    databaseUrl: options.databaseUrl,
    eventStoreUrl: options.eventStoreUrl,
    applicationName: options.applicationName ?? "gateway",
    ...(options.databaseConnectionsMax === undefined
      ? {}
      : { connectionsMax: options.databaseConnectionsMax }),
    logger: options.logger,
  });
}

/**
 * The projection runner and the checkpointer (one process leads, the others stand by), or, for a
 * gateway-role process, the wait until a worker has prepared the projections at the versions it knows.
 */
async function startProjections(options: ServiceOptions, ledger: Ledger): Promise<{ stop(): Promise<void> }> {
  const logger = options.logger;
  if (!(options.runProjections ?? true)) {
    await untilProjectionsPrepared(ledger.pool, allProjections, {
      pollIntervalMs: limits.projectionStandbyRetryMs,
      onWaiting: (notPrepared) => {
        const newer = notPrepared.filter(({ folded, known }) => folded !== undefined && folded > known);
        if (newer.length === 0)
          logger.info(
            { missing: notPrepared.map(({ name }) => name) },
            "waiting for a worker process to prepare the projections",
          );
        // A newer release's workers folded them: no worker of this release will lead them (projection-runner.ts).
        else
          logger.warn(
            {
              newer: newer.map(
                ({ name, folded, known }) => `${name} (v${folded}, this process knows v${known})`,
              ),
            },
            "waiting: the projections are folded by a newer release; replace this process with that release, or rebuild them with this one (npm run ledger -- rebuild)",
          );
      },
      ...(options.startAborted ? { signal: options.startAborted } : {}),
    });
    return { stop: async () => {} };
  }
  // Before any work: a worker of this release may charge (and read prices) while an earlier release's still
  // leads, and a column added inside the leader's refold would lock the table until that commits.
  await addMissingColumnsAtStart(
    ledger.pool,
    allProjections.flatMap((projection) => projection.tables),
    { lockWaitMs: limits.projectionColumnLockWaitMs, attemptsMax: limits.projectionColumnAttemptsMax },
  );
  const stopping = new AbortController();
  let lastStandingAside: string | undefined;
  const runner = new ProjectionRunner({
    pool: ledger.pool,
    connectionString: options.databaseUrl,
    store: ledger.store,
    projections: allProjections,
    batchSizeMax: limits.projectionBatchSizeMax,
    lingerMs: limits.projectionLingerMs,
    standbyRetryMs: limits.projectionStandbyRetryMs,
    // Each batch's NOTIFY names its accounts: gateways re-read only the cached keys of those.
    touchedBy: accountsTouchedBy,
    // …and which of them had their keys changed: of the others, gateways re-read only the funds.
    keysChangedBy: accountsWithKeysChangedBy,
    // …and whether a price, discount or FX rate changed: gateways then drop the pricing they hold.
    pricingChangedBy,
    onError: (error) => logger.error({ err: error }, "projection runner stopped; retrying"),
    onRecovered: () => logger.info("projection runner recovered"),
    // Each time the lock is free again the runner finds the same newer projections: say so once.
    onStandingAside: (reason) => {
      if (reason.message === lastStandingAside) return;
      lastStandingAside = reason.message;
      logger.warn({ reason: reason.message }, "projection runner stands aside for a newer release");
    },
  });
  const running: Promise<void>[] = [runner.run(stopping.signal)];
  // PostgreSQL only: the checkpoints seal the PostgreSQL log's order.
  if (options.ledgerSigningKey && ledger.store.kind === "postgresql") {
    running.push(
      runCheckpointer(
        {
          connectionString: options.databaseUrl,
          key: options.ledgerSigningKey,
          seal: {
            eventsMax: limits.checkpointEventsMax,
            intervalMs: limits.checkpointIntervalMs,
            checkpointsMax: limits.checkpointsPerPassMax,
          },
          pollIntervalMs: limits.checkpointPollIntervalMs,
          onError: (error) => logger.error({ err: error }, "ledger checkpointer stopped; retrying"),
          onRecovered: () => logger.info("ledger checkpointer recovered"),
        },
        stopping.signal,
      ),
    );
  }
  const stop = async () => {
    stopping.abort();
    await Promise.all(running);
  };
  // Key admission reads the projections' tables from the first request, and its cache each second.
  await untilProjectionTablesStand(ledger.pool, allProjections, {
    pollIntervalMs: limits.projectionTablesPollIntervalMs,
    ...(options.startAborted ? { signal: options.startAborted } : {}),
  }).catch(async (error: unknown) => {
    await stop();
    throw error;
  });
  return { stop };
}

/**
 * A signing key that did not seal the ledger's latest checkpoint is said at start, once: nothing else
 * would show it until a customer's receipt failed its signature check under the published key.
 */
async function warnOfAnotherSigningKey(
  ledger: Ledger,
  key: LedgerSigningKey | undefined,
  logger: Logger,
): Promise<void> {
  if (key === undefined || ledger.store.kind !== "postgresql") return;
  const sequence = await checkpointSignedByAnotherKey(ledger.pool, key.publicKey);
  if (sequence !== undefined)
    logger.warn(
      { checkpoint: sequence },
      "LEDGER_SIGNING_KEY did not sign the ledger's latest checkpoint: /ledger/public-key publishes a key its receipts fail under; give every process the key that sealed it",
    );
}

/**
 * Each key's admission data in memory, re-read when a projection commit notifies (the keys of the accounts
 * it touched), or all of them when a notification was lost (the cache's timer finds out each second).
 */
function startAdmissionCache(ledger: Ledger, waiter: ProjectionWaiter, logger: Logger): AdmissionCache {
  const admissionRefreshLog = throttledLog(logger, limits.admissionCacheErrorLogIntervalMs);
  const admissionCache = new AdmissionCache({
    read: (keyHashes) => readAdmission(ledger.pool, keyHashes),
    entriesMax: limits.admissionCacheEntriesMax,
    idleMs: limits.admissionCacheIdleMs,
    refreshIntervalMs: limits.admissionCacheRefreshIntervalMs,
    onRefreshError: (error) =>
      admissionRefreshLog.error({ err: errorSummaryOf(error) }, "refreshing the admission cache failed"),
  });
  waiter.addLocalReadModel(admissionCache);
  admissionCache.start();
  return admissionCache;
}

/** The money side of generation (C10): heartbeat, progress records, the settlement outbox and the holds. */
interface HoldParts {
  holds: GenerationHolds;
  outbox: UsageOutbox;
  /** Writes the settled hold rows into the log, off the request path. */
  settledLog: SettledHoldsLog;
  /** Keeps the hold rows' table as small as its live rows, as the log writer removes them. */
  holdRowsVacuum: HoldRowsVacuum;
  progress: HoldProgress;
  heartbeat: GatewayHeartbeat;
  session: GatewaySession;
  /** `key.limit_reached` alerts, noted on the request path and written to the webhook outbox off it. */
  keyLimitAlerts: KeyLimitAlerts;
  inFlight: RequestsInFlight;
}

async function startHolds(
  options: ServiceOptions,
  ledger: Ledger,
  timings: SettlementTimings,
  waiter: ProjectionWaiter,
): Promise<HoldParts> {
  const logger = options.logger;
  // Holds are placed by one PostgreSQL statement together with the funds check and the append (C10);
  // main.ts refuses EVENTSTORE_URL for the service's roles with one line, so this is a programmer error.
  assert(ledger.store instanceof PostgresEventStore, "the service runs on the PostgreSQL event store");
  const heartbeat = new GatewayHeartbeat(ledger.pool, timings.heartbeatIntervalMs, logger);
  await heartbeat.start();
  const progress = new HoldProgress({
    pool: ledger.pool,
    gatewayInstance: heartbeat.instanceId,
    progressIntervalMs: timings.progressIntervalMs,
    holdLifetimeMs: timings.holdLifetimeMs,
    confirmationMaxAgeMs: holdConfirmationMaxAgeMs(timings),
    logger,
  });
  progress.start();
  // Taken before the first hold; while it is lost, no request relays output (hold-progress.ts).
  const session = new GatewaySession(ledger.pool, heartbeat.instanceId, timings.heartbeatIntervalMs, logger, {
    onLost: () => progress.sessionLost(),
    onTaken: () => progress.sessionTaken(),
  });
  await session.start();
  const holdRowsVacuum = new HoldRowsVacuum({
    pool: ledger.pool,
    rowsPerVacuum: limits.holdRowsVacuumAfterRows,
    intervalMinMs: limits.holdRowsVacuumIntervalMinMs,
    logger,
  });
  const settledLog = new SettledHoldsLog({
    pool: ledger.pool,
    log: ledger.store.appendsBeside,
    enqueueCharges: (requestIds) => {
      for (const requestId of requestIds) options.charges.enqueueCharge(requestId);
    },
    vacuum: holdRowsVacuum,
    logger,
    batchSizeMax: limits.settledHoldsLogBatchSizeMax,
    pollIntervalMs: limits.settledHoldsLogPollIntervalMs,
    lingerMs: limits.settledHoldsLogLingerMs,
  });
  settledLog.start();
  const outbox = new UsageOutbox({
    completion: new HoldRowCompletion(ledger.pool, limits.usageCompletionBatchSizeMax),
    log: settledLog,
    store: ledger.store,
    reserves: new SweptHoldReserves(ledger.pool),
    charges: options.charges,
    logger,
    entriesMax: limits.usageOutboxEntriesMax,
    retryDelaysMs: limits.usageOutboxRetryDelaysMs,
  });
  const keyLimitAlerts = new KeyLimitAlerts({ database: ledger.pool, logger });
  const pricing = new HoldPricing({
    read: createPricingReadModel(ledger.pool),
    ttlMs: limits.holdPricingTtlMs,
    entriesMax: limits.holdPricingEntriesMax,
  });
  // Dropped when a projection batch changes a price, a discount or a rate, and by this process's own changes.
  waiter.addLocalReadModel(pricing);
  const holds = new GenerationHolds({
    authorizer: new HoldAuthorizer(
      new PostgresUsageAuthorizations(ledger.pool),
      limits.holdBatchSizeMax,
      limits.holdHintEntriesMax,
    ),
    pricing,
    outbox,
    progress,
    availableNow: (account) => readAvailableWon(ledger.pool, account),
    gatewayInstance: heartbeat.instanceId,
    limits: {
      expectedOutputTokens: limits.holdExpectedOutputTokens,
      holdFirstBelowHolds: limits.holdFirstBelowHolds,
      holdLifetimeMs: timings.holdLifetimeMs,
      refusalRecheckWaitMs: limits.holdRefusalRecheckWaitMs,
      answerWaitMs: limits.holdAnswerWaitMs,
    },
    logger,
    onKeyLimitRefused: (refusal) => keyLimitAlerts.noted(refusal),
  });
  return {
    holds,
    outbox,
    settledLog,
    holdRowsVacuum,
    progress,
    heartbeat,
    session,
    keyLimitAlerts,
    inFlight: new RequestsInFlight(),
  };
}

function modelPriceListOf(ledger: Ledger, logger: Logger): ModelPriceList {
  const pricesLog = throttledLog(logger, limits.admissionCacheErrorLogIntervalMs);
  return new ModelPriceList({
    read: createPricingReadModel(ledger.pool),
    ttlMs: limits.holdPricingTtlMs,
    entriesMax: limits.holdPricingEntriesMax,
    onError: (error) => pricesLog.error({ err: errorSummaryOf(error) }, "reading model prices failed"),
  });
}

/** /llm: keys, activity, prices, playground, usage and receipts behind a session (receipts: a key too). */
function accountRouterOf(
  options: ServiceOptions,
  parts: ServiceParts,
  generation: { prices: ModelPriceList; keyAdmission: ApiKeyAdmission },
): express.Router {
  const { ledger, sessions, consoleAuth, keys, roles, waiter } = parts;
  const account = express.Router();
  const sessionRequired = authenticateSession(sessions, consoleAuth);
  account.use("/apis", sessionRequired, createKeyRouter(keys, roles));
  account.use(
    "/organization/key-defaults",
    sessionRequired,
    createOrganizationKeyDefaultsRouter(keys, roles),
  );
  account.use("/organization/members", sessionRequired, createOrganizationMemberRouter(roles));
  const { alertRouter, webhookRouter } = createAlertRouters(
    new AlertService({
      pool: ledger.pool,
      store: ledger.store,
      waiter,
      projectionWaitTimeoutMs: limits.projectionWaitTimeoutMs,
      allowPrivateNetworks: options.webhookAllowPrivateNetworks ?? false,
    }),
    roles,
  );
  account.use("/alerts", sessionRequired, alertRouter);
  account.use("/webhooks", sessionRequired, webhookRouter);
  account.use("/usage/activity", sessionRequired, createActivityRouter(ledger.pool, roles));
  account.use("/models", sessionRequired, createModelRouter(generation.prices));
  account.use("/playground", sessionRequired, createPlaygroundRouter(keys));
  account.use("/usage", sessionRequired, createUsageRouter(ledger.pool, roles));
  account.use(
    "/receipts",
    createReceiptRouter({
      database: ledger.pool,
      authenticateKey: (header) => generation.keyAdmission.authenticate(header, { requireCredit: false }),
      sessionRequired,
      roles,
    }),
  );
  if (options.accountRouter) account.use(sessionRequired, options.accountRouter(parts));
  return account;
}

/** /admin, behind the admin token (or the console's admin cookie); none without ADMIN_TOKEN. */
function adminRouterOf(
  options: ServiceOptions,
  parts: ServiceParts,
  upstreams: UpstreamRegistry,
): express.Router | undefined {
  if (!options.adminToken) return undefined;
  const { ledger, sessions, consoleAuth, keys, logger } = parts;
  const admin = express.Router();
  admin.use(
    authenticateAdminOrConsole(authenticateAdmin(options.adminToken), consoleAuth),
    createAdminSessionRouter(sessions, logger),
    createConsoleReadRouter(ledger.pool),
    createAdminKeyLimitsRouter(keys),
    createAdminActivityRouter(ledger.pool),
    createAdminUserAccessRouter({ keys, consoleAuth, logger }),
    createUpstreamHealthRouter(upstreams),
  );
  if (options.adminRouter) admin.use(options.adminRouter(parts));
  return admin;
}

/** Every router of the HTTP edge, mounted on one application (src/gateway/app.ts). */
function applicationOf(
  options: ServiceOptions,
  parts: ServiceParts,
  edge: {
    generation: RequestListener;
    prices: ModelPriceList;
    keyAdmission: ApiKeyAdmission;
    upstreams: UpstreamRegistry;
    requestLog: RequestLogWriter;
  },
): RequestListener {
  const admin = adminRouterOf(options, parts, edge.upstreams);
  return createApp({
    routers: {
      generation: edge.generation,
      account: accountRouterOf(options, parts, edge),
      ...(admin ? { admin } : {}),
      ...(options.operationsRouter ? { operations: options.operationsRouter(parts) } : {}),
      console: createConsoleRouter({
        sessions: parts.sessions,
        consoleAuth: parts.consoleAuth,
        adminEnabled: admin !== undefined,
        oidc: options.oidc ? new OidcSignIn(options.oidc) : undefined,
        recordRoleClaim: recordRoleClaimOf(options.oidc, parts.roles),
        logger: parts.logger,
      }),
      ledger: createLedgerPublicRouter(parts.ledgerPublicKey),
    },
    requestBodyBytesMax: options.requestBodyBytesMax,
    logger: parts.logger,
    publicUrl: options.publicUrl,
    isServedModel: (slug) => findModel(slug) !== undefined,
    familyOf: (slug) => findModel(slug)?.family,
    requestLog: (entry) => edge.requestLog.write(entry),
  });
}

/** With the provider's role claim configured, what its sign-ins record (C14: the claim wins). */
function recordRoleClaimOf(oidc: OidcSettings | undefined, roles: OrganizationRoleService) {
  if (oidc?.roleClaim === undefined) return undefined;
  const provider = `oidc:${oidc.issuer}`;
  return (session: Session, correlationId: string) =>
    roles.recordProviderClaim(session, provider, correlationId);
}

function startRequestLog(ledger: Ledger, logger: Logger): RequestLogWriter {
  const requestLog = new RequestLogWriter({
    database: ledger.pool,
    flushIntervalMs: limits.requestLogFlushIntervalMs,
    batchRowsMax: limits.requestLogBatchRowsMax,
    queueRowsMax: limits.requestLogQueueRowsMax,
    retention: {
      days: limits.requestLogRetentionDays,
      pruneIntervalMs: limits.requestLogPruneIntervalMs,
      pruneRowsMax: limits.requestLogPruneRowsMax,
    },
    logger,
  });
  requestLog.start();
  return requestLog;
}

/**
 * The HTTP server around `app`: listening, draining at a stop (C10: streams still running at the bound are
 * cut with an error event and billed as `shutdown`), and closing, after which `closeParts` closes the rest.
 */
function httpEdgeOf(
  app: RequestListener,
  lifecycle: { draining: boolean },
  money: HoldParts,
  timings: SettlementTimings,
  logger: Logger,
  closeParts: () => Promise<void>,
): Pick<RunningService, "requestListener" | "listen" | "drain" | "close"> {
  // While draining, a kept-alive connection is closed after its response instead of waiting for more: so
  // its client sends its next request elsewhere, rather than on a connection the drain is about to close.
  // The responses already in flight when the drain starts say so too, unless their headers are out.
  const unanswered = new Set<ServerResponse>();
  const requestListener: RequestListener = (request, response) => {
    if (lifecycle.draining) response.setHeader("connection", "close");
    else {
      unanswered.add(response);
      response.once("close", () => unanswered.delete(response));
    }
    app(request, response);
  };
  const startDraining = () => {
    lifecycle.draining = true;
    for (const response of unanswered) if (!response.headersSent) response.setHeader("connection", "close");
    unanswered.clear();
  };
  let server: Server | undefined;
  return {
    requestListener,
    listen: (port, host) =>
      new Promise((resolve, reject) => {
        const listening = createServer(requestListener).listen(port, host, () => {
          server = listening;
          const address = listening.address();
          const boundPort = typeof address === "object" && address ? address.port : port;
          resolve({ server: listening, url: `http://${urlHostOf(host)}:${boundPort}` });
        });
        listening.keepAliveTimeout = limits.httpKeepAliveTimeoutMs;
        listening.headersTimeout = limits.httpHeadersTimeoutMs;
        listening.requestTimeout = limits.httpRequestTimeoutMs;
        listening.on("error", reject);
        listening.on("clientError", answerClientError);
      }),
    drain: async () => {
      startDraining();
      let requestsCut = 0;
      if (server) {
        requestsCut = await drainServer(
          server,
          money.inFlight,
          timings.shutdownDrainMs,
          limits.shutdownCutGraceMs,
        );
        server = undefined;
      }
      // Every answered request's settlement is written before the ledger closes; what cannot be in time is
      // left to the orphan sweep, which finds this process gone once its heartbeat row is.
      const unsettled = await money.outbox.drain(limits.usageOutboxDrainMs);
      if (unsettled > 0) logger.error({ unsettled }, "settlements left to the orphan sweep");
      await money.settledLog.flushWithin(limits.usageOutboxDrainMs);
      return { requestsCut };
    },
    close: async () => {
      startDraining();
      if (server) {
        await drainServer(server, money.inFlight, 0, limits.shutdownCutGraceMs);
        server = undefined;
      }
      await money.outbox.drain(limits.usageOutboxDrainMs);
      await money.settledLog.flushWithin(limits.usageOutboxDrainMs);
      await closeParts();
    },
  };
}

/**
 * Stops accepting connections and waits up to `drainMs` for those open to finish their requests; idle
 * kept-alive ones are closed as they become idle. At the bound the generation requests still running are
 * cut (each ends as its format says and records its usage), and get `cutGraceMs` to do so; connections still
 * open after that are closed. Answers how many requests were cut, or connections closed if more.
 */
async function drainServer(
  server: Server,
  inFlight: RequestsInFlight,
  drainMs: number,
  cutGraceMs: number,
): Promise<number> {
  let open = true;
  const closed = new Promise<void>((resolve) =>
    server.close(() => {
      open = false;
      resolve();
    }),
  );
  const untilClosedOr = async (deadlineMs: number) => {
    while (open && Date.now() < deadlineMs) {
      server.closeIdleConnections();
      await Promise.race([closed, sleep(50)]);
    }
  };
  await untilClosedOr(Date.now() + drainMs);
  if (!open) return 0;
  const requestsCut = inFlight.cutAll("shutdown");
  await untilClosedOr(Date.now() + cutGraceMs);
  if (!open) return requestsCut;
  const busy = await new Promise<number>((resolve) =>
    server.getConnections((error, count) => resolve(error ? 0 : count)),
  );
  server.closeAllConnections();
  await closed;
  return Math.max(requestsCut, busy);
}

/**
 * The host of a URL reaching a server bound to `host`: a wildcard bind (every address) is reached at
 * localhost, and an IPv6 literal goes in brackets (`HOST=::` made `http://:::8080`).
 */
export function urlHostOf(host: string): string {
  if (host === "0.0.0.0" || host === "::" || host === "[::]") return "localhost";
  return host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
}
