import { createServer, type RequestListener, type Server } from "node:http";
import express from "express";
import type { Logger } from "pino";
import { allProjections } from "../projections";
import type { ChargeEnqueuer } from "./billing/charge-enqueuer";
import { errorSummaryOf, throttledLog } from "./billing/throttled-log";
import { limits } from "./config";
import { createUsageRouter } from "./gateway/account/usage-routes";
import { createConsoleReadRouter } from "./gateway/admin/console-read-routes";
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
import { type FamilyUpstream, UpstreamRegistry } from "./gateway/generation/upstream-registry";
import { UsageRecorder } from "./gateway/generation/usage-recorder";
import { createKeyRouter } from "./gateway/keys/key-routes";
import { authenticateAdmin } from "./gateway/middleware/authenticate-admin";
import { authenticateSession } from "./gateway/middleware/authenticate-session";
import { createAdminSessionRouter } from "./gateway/sessions/admin-session-routes";
import { ApiKeyHasher } from "./keys/api-key-secret";
import { ApiKeyService } from "./keys/api-key-service";
import { GroupCommitAppender } from "./ledger/group-commit-appender";
import { type Ledger, openLedger } from "./ledger/open-ledger";
import { ProjectionRunner } from "./ledger/projection-runner";
import { ProjectionWaiter } from "./ledger/projection-waiter";
import { untilProjectionsPrepared } from "./ledger/projections-prepared";
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
  upstreamTimeouts?: Partial<UpstreamTimeouts>;
  charges: ChargeEnqueuer;
  requestBodyBytesMax: number;
  logger: Logger;
  /** Extra routers mounted next to the built-in ones (billing's admin and account routes). */
  adminRouter?: (parts: ServiceParts) => express.Router;
  accountRouter?: (parts: ServiceParts) => express.Router;
  applicationName?: string;
  /**
   * Whether this process takes part in running the projections (one process leads, the others stand by).
   * False for `--role=gateway`: the edge only appends and reads, and waits at start until a worker has
   * prepared the projections. Default true.
   */
  runProjections?: boolean;
}

export interface ServiceParts {
  ledger: Ledger;
  waiter: ProjectionWaiter;
  sessions: SessionTokens;
  keys: ApiKeyService;
  /** The web console's cookies: CSRF tokens, the admin cookie, one-time sign-in links. */
  consoleAuth: ConsoleAuth;
  logger: Logger;
}

export interface RunningService extends ServiceParts {
  /** The HTTP edge's request listener. */
  requestListener: RequestListener;
  /** Starts listening; resolves with the bound address. */
  listen(port: number, host: string): Promise<{ server: Server; url: string }>;
  close(): Promise<void>;
}

export async function startService(options: ServiceOptions): Promise<RunningService> {
  const logger = options.logger;
  const ledger = await openLedger({
    databaseUrl: options.databaseUrl,
    eventStoreUrl: options.eventStoreUrl,
    applicationName: options.applicationName ?? "gateway",
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
  } else {
    await untilProjectionsPrepared(ledger.pool, allProjections, {
      pollIntervalMs: limits.projectionStandbyRetryMs,
      onWaiting: (missing) =>
        logger.info({ missing }, "waiting for a worker process to prepare the projections"),
    });
  }
  const waiter = new ProjectionWaiter(ledger.pool, options.databaseUrl, limits.projectionWaitPollIntervalMs);
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
  const upstreams = new UpstreamRegistry(options.upstreams, options.upstreamTimeouts ?? {});
  const consoleAuth = new ConsoleAuth(options.sessionSecret, options.adminToken);
  const parts: ServiceParts = { ledger, waiter, sessions, keys, consoleAuth, logger };

  const generation = createGenerationEndpoints(
    {
      admission: new ApiKeyAdmission(admissionCache, hasher),
      upstreams,
      usage: new UsageRecorder(
        new GroupCommitAppender(ledger.store, limits.usageAppendBatchSizeMax),
        options.charges,
        logger,
      ),
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
    );
    if (options.adminRouter) admin.use(options.adminRouter(parts));
  }
  const requestListener = createApp({
    routers: {
      generation,
      account,
      ...(admin ? { admin } : {}),
      console: createConsoleRouter({ sessions, consoleAuth, adminEnabled: admin !== undefined }),
    },
    requestBodyBytesMax: options.requestBodyBytesMax,
    logger,
  });

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
      }),
    close: async () => {
      if (server) {
        const closing = new Promise<void>((resolve) => server!.close(() => resolve()));
        server.closeIdleConnections();
        await closing;
      }
      admissionCache.stop();
      stopProjections.abort();
      await projections;
      await waiter.close();
      await upstreams.close();
      await ledger.close();
    },
  };
}
