import { createServer, type RequestListener, type Server } from "node:http";
import express from "express";
import type { Logger } from "pino";
import { allProjections } from "../projections";
import { GatewayHeartbeat } from "./billing/holds/gateway-heartbeat";
import { GenerationHolds } from "./billing/holds/generation-holds";
import { HoldAuthorizer } from "./billing/holds/hold-authorizer";
import { HoldPricing } from "./billing/holds/hold-pricing";
import { UsageOutbox } from "./billing/holds/usage-outbox";
import type { ChargeEnqueuer } from "./billing/queue/charge-enqueuer";
import { createPricingReadModel } from "./billing/read-models/pricing-read-model";
import { errorSummaryOf, throttledLog } from "./billing/throttled-log";
import { limits } from "./config";
import { createUsageRouter } from "./gateway/account/usage-routes";
import { createConsoleReadRouter } from "./gateway/admin/console-read-routes";
import { createAdminKeyLimitsRouter } from "./gateway/admin/key-limits-routes";
import { createUpstreamHealthRouter } from "./gateway/admin/upstream-routes";
import { createApp } from "./gateway/app";
import { authenticateAdminOrConsole } from "./gateway/console/authenticate-admin-console";
import { ConsoleAuth } from "./gateway/console/console-auth";
import { createConsoleRouter } from "./gateway/console/console-router";
import { AdmissionCache } from "./gateway/generation/admission-cache";
import { readAdmission } from "./gateway/generation/admission-read-model";
import { ApiKeyAdmission } from "./gateway/generation/api-key-admission";
import { chatCompletionsFormat } from "./gateway/generation/chat-completions-format";
import { createGenerationEndpoints } from "./gateway/generation/generation-endpoints";
import { responsesFormat } from "./gateway/generation/responses-format";
import {
  type FamilyUpstream,
  UpstreamRegistry,
  type UpstreamResilienceOptions,
} from "./gateway/generation/upstream-registry";
import { answerClientError } from "./gateway/http/client-error";
import { createKeyRouter } from "./gateway/keys/key-routes";
import { authenticateAdmin } from "./gateway/middleware/authenticate-admin";
import { authenticateSession } from "./gateway/middleware/authenticate-session";
import { createAdminSessionRouter } from "./gateway/sessions/admin-session-routes";
import { ApiKeyHasher } from "./keys/api-key-secret";
import { ApiKeyService } from "./keys/api-key-service";
import { runCheckpointer } from "./ledger/integrity/ledger-checkpointer";
import type { LedgerSigningKey } from "./ledger/integrity/ledger-signing-key";
import { ProjectionRunner } from "./ledger/projection/projection-runner";
import { ProjectionWaiter } from "./ledger/projection/projection-waiter";
import { untilProjectionsPrepared } from "./ledger/projection/projections-prepared";
import { GroupCommitAppender } from "./ledger/store/group-commit-appender";
import { type Ledger, openLedger } from "./ledger/store/open-ledger";
import { PostgresEventStore } from "./ledger/store/postgres-event-store";
import { upstreamMetrics } from "./operations/upstream-metrics";
import { findModel } from "./providers/catalog";
import type { UpstreamTimeouts } from "./providers/create-adapter";
import type { ModelFamily } from "./providers/provider";
import { SessionTokens } from "./sessions/session-tokens";

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
  /**
   * Signs ledger checkpoints. Processes that run the projections also run the checkpointer (one leads);
   * without a key nothing is sealed.
   */
  ledgerSigningKey?: LedgerSigningKey | undefined;
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
   * requests in flight get `drainMs` to finish (then their connections are cut), and the usage they
   * record is in the ledger when this resolves. Answers how many connections had to be cut.
   */
  drain(drainMs: number): Promise<{ connectionsCut: number }>;
  /** Stops the projections and closes the server (if not drained), the waiter, upstreams and pools. */
  close(): Promise<void>;
}

export async function startService(options: ServiceOptions): Promise<RunningService> {
  const logger = options.logger;
  const ledger = await openLedger({
    databaseUrl: options.databaseUrl,
    eventStoreUrl: options.eventStoreUrl,
    applicationName: options.applicationName ?? "gateway",
    ...(options.databaseConnectionsMax === undefined
      ? {}
      : { connectionsMax: options.databaseConnectionsMax }),
    logger,
  });
  const stopProjections = new AbortController();
  let projections: Promise<void> = Promise.resolve();
  if (options.runProjections ?? true) {
    const runner = new ProjectionRunner({
      pool: ledger.pool,
      connectionString: options.databaseUrl,
      store: ledger.store,
      projections: allProjections,
      batchSizeMax: limits.projectionBatchSizeMax,
      lingerMs: limits.projectionLingerMs,
      standbyRetryMs: limits.projectionStandbyRetryMs,
      onError: (error) => logger.error({ err: error }, "projection runner stopped; retrying"),
    });
    projections = runner.run(stopProjections.signal);
    // PostgreSQL only: the checkpoints seal the PostgreSQL log's order.
    if (options.ledgerSigningKey && ledger.store.kind === "postgresql") {
      const checkpointing = runCheckpointer(
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
        },
        stopProjections.signal,
      );
      projections = Promise.all([projections, checkpointing]).then(() => {});
    }
  } else {
    await untilProjectionsPrepared(ledger.pool, allProjections, {
      pollIntervalMs: limits.projectionStandbyRetryMs,
      onWaiting: (missing) =>
        logger.info({ missing }, "waiting for a worker process to prepare the projections"),
    });
  }
  const waiter = new ProjectionWaiter(ledger.pool, options.databaseUrl, limits.projectionWaitPollIntervalMs, {
    logger,
  });
  await waiter.start();

  const hasher = new ApiKeyHasher(options.keyPepper);
  const sessions = new SessionTokens(options.sessionSecret);
  const keys = new ApiKeyService({
    pool: ledger.pool,
    store: ledger.store,
    waiter,
    hasher,
    projectionWaitTimeoutMs: limits.projectionWaitTimeoutMs,
  });
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
  const upstreams = new UpstreamRegistry(
    options.upstreams,
    options.upstreamTimeouts ?? {},
    options.modelUpstreams,
    { observer: upstreamMetrics, ...options.upstreamResilience },
  );
  const lifecycle = { draining: false };
  const consoleAuth = new ConsoleAuth(options.sessionSecret, options.adminToken);
  const parts: ServiceParts = {
    lifecycle,
    ledger,
    waiter,
    sessions,
    keys,
    consoleAuth,
    logger,
    ledgerPublicKey: options.ledgerSigningKey?.publicKey,
  };
  // Holds are placed by one PostgreSQL statement together with the funds check (C10).
  if (!(ledger.store instanceof PostgresEventStore))
    throw new Error(
      "holds (C10) need the PostgreSQL event store; the EventStoreDB store cannot place them yet",
    );
  const heartbeat = new GatewayHeartbeat(ledger.pool, limits.gatewayHeartbeatIntervalMs, logger);
  await heartbeat.start();
  const outbox = new UsageOutbox({
    appender: new GroupCommitAppender(ledger.store, limits.usageAppendBatchSizeMax),
    store: ledger.store,
    charges: options.charges,
    logger,
    entriesMax: limits.usageOutboxEntriesMax,
    retryDelaysMs: limits.usageOutboxRetryDelaysMs,
  });
  const holds = new GenerationHolds({
    authorizer: new HoldAuthorizer(ledger.store, limits.holdBatchSizeMax),
    pricing: new HoldPricing({
      read: createPricingReadModel(ledger.pool),
      ttlMs: limits.holdPricingTtlMs,
      entriesMax: limits.holdPricingEntriesMax,
    }),
    outbox,
    gatewayInstance: heartbeat.instanceId,
    limits: {
      expectedOutputTokens: limits.holdExpectedOutputTokens,
      holdFirstBelowHolds: limits.holdFirstBelowHolds,
      holdLifetimeMs: limits.holdLifetimeMs,
      refusalRecheckWaitMs: limits.holdRefusalRecheckWaitMs,
    },
    logger,
  });

  const generation = createGenerationEndpoints(
    {
      admission: new ApiKeyAdmission(admissionCache, hasher),
      upstreams,
      holds,
      logger,
    },
    { chatCompletions: chatCompletionsFormat, responses: responsesFormat },
    { requestBodyBytesMax: options.requestBodyBytesMax, logger },
  );
  const account = express.Router();
  const sessionRequired = authenticateSession(sessions, consoleAuth);
  account.use("/apis", sessionRequired, createKeyRouter(keys));
  account.use("/usage", sessionRequired, createUsageRouter(ledger.pool));
  if (options.accountRouter) account.use(sessionRequired, options.accountRouter(parts));
  const admin = options.adminToken ? express.Router() : undefined;
  if (admin && options.adminToken) {
    admin.use(
      authenticateAdminOrConsole(authenticateAdmin(options.adminToken), consoleAuth),
      createAdminSessionRouter(sessions),
      createConsoleReadRouter(ledger.pool),
      createAdminKeyLimitsRouter(keys),
      createUpstreamHealthRouter(upstreams),
    );
    if (options.adminRouter) admin.use(options.adminRouter(parts));
  }
  const app = createApp({
    routers: {
      generation,
      account,
      ...(admin ? { admin } : {}),
      ...(options.operationsRouter ? { operations: options.operationsRouter(parts) } : {}),
      console: createConsoleRouter({ sessions, consoleAuth, adminEnabled: admin !== undefined }),
    },
    requestBodyBytesMax: options.requestBodyBytesMax,
    logger,
    isServedModel: (slug) => findModel(slug) !== undefined,
  });
  // While draining, a kept-alive connection is closed after its response instead of waiting for more.
  const requestListener: RequestListener = (request, response) => {
    if (lifecycle.draining) response.setHeader("connection", "close");
    app(request, response);
  };

  let server: Server | undefined;
  return {
    ...parts,
    requestListener,
    listen: (port, host) =>
      new Promise((resolve, reject) => {
        const listening = createServer(requestListener).listen(port, host, () => {
          server = listening;
          const address = listening.address();
          const boundPort = typeof address === "object" && address ? address.port : port;
          resolve({ server: listening, url: `http://${host}:${boundPort}` });
        });
        listening.keepAliveTimeout = limits.httpKeepAliveTimeoutMs;
        listening.headersTimeout = limits.httpHeadersTimeoutMs;
        listening.requestTimeout = 0;
        listening.on("error", reject);
        listening.on("clientError", answerClientError);
      }),
    drain: async (drainMs) => {
      lifecycle.draining = true;
      let connectionsCut = 0;
      if (server) {
        connectionsCut = await drainServer(server, drainMs);
        server = undefined;
      }
      // A cut stream's handler still records what it produced, once its upstream read notices the abort.
      if (connectionsCut > 0) await new Promise((resolve) => setTimeout(resolve, limits.shutdownCutGraceMs));
      // Every answered request's settlement is written before the ledger closes; what cannot be in time is
      // left to the orphan sweep, which finds this process gone once its heartbeat row is.
      const unsettled = await outbox.drain(limits.usageOutboxDrainMs);
      if (unsettled > 0) logger.error({ unsettled }, "settlements left to the orphan sweep");
      return { connectionsCut };
    },
    close: async () => {
      lifecycle.draining = true;
      if (server) {
        await drainServer(server, 0);
        server = undefined;
      }
      await outbox.drain(limits.usageOutboxDrainMs);
      await heartbeat.stop();
      admissionCache.stop();
      stopProjections.abort();
      await projections;
      await waiter.close();
      await upstreams.close();
      await ledger.close();
    },
  };
}

/**
 * Stops accepting connections and waits up to `drainMs` for those open to finish their requests; idle
 * kept-alive ones are closed as they become idle. Answers how many were still busy at the deadline (cut).
 */
async function drainServer(server: Server, drainMs: number): Promise<number> {
  let open = true;
  const closed = new Promise<void>((resolve) =>
    server.close(() => {
      open = false;
      resolve();
    }),
  );
  const deadlineMs = Date.now() + drainMs;
  while (open && Date.now() < deadlineMs) {
    server.closeIdleConnections();
    await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 50))]);
  }
  if (!open) return 0;
  const busy = await new Promise<number>((resolve) =>
    server.getConnections((error, count) => resolve(error ? 0 : count)),
  );
  server.closeAllConnections();
  await closed;
  return busy;
}
