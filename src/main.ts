import { type Config, loadConfig, modelFamilies } from "./config";
import {
  type LocalDatabase,
  loadOrCreateLocalSecrets,
  localLedgerSigningKeyFile,
  localSecretsFile,
  startLocalDatabase,
} from "./database/local-data";
import { printFirstStartBanner, seedDemoAccountOnce } from "./demo-account";
import type { EndpointUpstream, FamilyUpstream } from "./gateway/generation/upstream-registry";
import { ConfigError } from "./kernel/config-error";
import { limits } from "./kernel/limits";
import { ledgerSigningKeyOf } from "./ledger/integrity/ledger-signing-key-setting";
import { configErrorOfListenFailure } from "./listen-failure";
import { createLogger, type Logger } from "./logger";
import { createOperations } from "./operations/operations";
import { type Role, refuseUnsupportedTopology, roleOf } from "./process-role";
import { installModels, listModels } from "./providers/catalog";
import { loadModelsFile, ModelsFileError } from "./providers/models-file";
import type { ModelFamily } from "./providers/provider";
import { type Simulator, startSimulator } from "./providers/simulator/simulator";
import { startService } from "./service";
import { demoSignInCodeOf, printStartBanner } from "./start-banner";
import { startBilling } from "./start-billing";

/**
 * Composition root. `npm start` runs every part in one process; `--role=gateway` runs the HTTP edge alone
 * and `--role=worker` the background work (projections, reconciler, sweeper, FX refresh), any number of
 * each, sharing PostgreSQL (and Redis). A scale-out deployment needs at least one worker.
 */

interface Secrets {
  sessionSecret: string;
  keyPepper: string;
  adminToken: string | undefined;
}

async function resolveDatabase(
  config: Config,
  logger: Logger,
): Promise<{ url: string; local?: LocalDatabase; secrets: Secrets }> {
  if (config.databaseUrl) {
    if (!config.sessionSecret || !config.keyPepper) throw missingSecretsError(config);
    return {
      url: config.databaseUrl,
      secrets: {
        sessionSecret: config.sessionSecret,
        keyPepper: config.keyPepper,
        adminToken: config.adminToken,
      },
    };
  }
  const { secrets } = await loadOrCreateLocalSecrets();
  logger.info("no DATABASE_URL: starting embedded PostgreSQL in ./.data/");
  const local = await startLocalDatabase(secrets.postgresPassword, (line) =>
    logger.debug({ postgres: line }),
  );
  return {
    url: local.url,
    local,
    secrets: {
      sessionSecret: config.sessionSecret ?? secrets.sessionSecret,
      keyPepper: config.keyPepper ?? secrets.keyPepper,
      adminToken: config.adminToken ?? secrets.adminToken,
    },
  };
}

/** Both missing secrets named at once, with how to make one: leaving the embedded database needs both. */
function missingSecretsError(config: Config): ConfigError {
  const missing = [
    ...(config.sessionSecret ? [] : ["SESSION_SECRET"]),
    ...(config.keyPepper ? [] : ["KEY_PEPPER"]),
  ];
  const verb = missing.length === 1 ? "is" : "are";
  const each = missing.length === 1 ? "" : " each";
  return new ConfigError(
    `invalid configuration: ${missing.join(" and ")} ${verb} required when DATABASE_URL is set (32+ characters${each}; openssl rand -hex 32 makes one)`,
  );
}

async function resolveUpstreams(
  config: Config,
): Promise<{ upstreams: Record<ModelFamily, FamilyUpstream>; simulator?: Simulator }> {
  const simulated = modelFamilies.filter((family) => !config.upstreams[family].apiKey);
  const simulator =
    simulated.length > 0
      ? await startSimulator({
          latencyMs: config.simulatorLatencyMs,
          tokensPerSecond: config.simulatorTokensPerSecond,
        })
      : undefined;
  const upstreams = Object.fromEntries(
    modelFamilies.map((family) => {
      const upstream = config.upstreams[family];
      if (upstream.apiKey) {
        if (!upstream.baseUrl)
          throw new ConfigError(
            `invalid configuration: ${family.toUpperCase()}_BASE_URL is required with ${family.toUpperCase()}_API_KEY`,
          );
        return [family, { baseUrl: upstream.baseUrl, apiKey: upstream.apiKey }];
      }
      return [family, { baseUrl: simulator!.url, apiKey: "simulator" }];
    }),
  ) as Record<ModelFamily, FamilyUpstream>;
  return { upstreams, ...(simulator ? { simulator } : {}) };
}

const stopSignals = ["SIGINT", "SIGTERM", "SIGHUP"] as const;
type StopSignal = (typeof stopSignals)[number];
/** The endpoints of models the models file gave several (`endpoints`), their keys read, by slug. */
function modelEndpointsOf(): Map<string, EndpointUpstream[]> {
  return new Map(
    listModels().flatMap((model) =>
      model.endpoints
        ? [
            [
              model.slug,
              model.endpoints.map(({ apiKeyVariable, ...endpoint }) => ({
                ...endpoint,
                apiKey: process.env[apiKeyVariable]!.trim(),
              })),
            ],
          ]
        : [],
    ),
  );
}

/** Adds MODELS_FILE's models to the catalog; returns the upstreams of those that have their own. */
async function installModelsFile(config: Config): Promise<Map<string, FamilyUpstream>> {
  if (config.modelsFile === undefined) return new Map();
  try {
    installModels(await loadModelsFile(config.modelsFile, process.env));
  } catch (error) {
    if (error instanceof ModelsFileError) throw new ConfigError(`invalid configuration: ${error.message}`);
    throw error;
  }
  return new Map(
    listModels().flatMap((model) =>
      model.upstream
        ? [
            [
              model.slug,
              { baseUrl: model.upstream.baseUrl, apiKey: process.env[model.upstream.apiKeyVariable]!.trim() },
            ],
          ]
        : [],
    ),
  );
}

/** What one role started, and how to close it all, the embedded database last. */
interface RunningRole {
  database: Awaited<ReturnType<typeof resolveDatabase>>;
  billing: Awaited<ReturnType<typeof startBilling>>;
  operations: ReturnType<typeof createOperations>;
  service: Awaited<ReturnType<typeof startService>>;
  closeAll(): Promise<void>;
}

async function main(): Promise<void> {
  const signals = stopSignalsFromTheStart();
  const config = loadConfig();
  const role = roleOf(process.argv.slice(2));
  refuseUnsupportedTopology(config, role);
  const logger = createLogger(config.logLevel);
  const running = await startRole(config, role, logger, signals.startAborted).catch((error: unknown) => {
    if (!signals.startAborted.aborted) throw error;
    // Stopped while it waited for what may never come (a worker to prepare the projections).
    logger.info({ signal: signals.startAborted.reason }, "stopped before it had started");
    logger.flush();
    process.exit(0);
  });
  const baseUrl = await listenAsRole(config, role, running, logger);
  await printBanner(running, baseUrl);
  signals.onStop((signal) =>
    stopRole(config, running, logger, signal).catch((error: unknown) => {
      logger.error({ err: error }, "stopping failed");
      logger.flush();
      process.exit(1);
    }),
  );
}

/**
 * From the first moment: a signal during start-up stops the process once it has started, cleanly — or at
 * once, through `startAborted`, if start-up is waiting for something that may never come. SIGINT twice (a
 * terminal's Ctrl-C reaches npm, which forwards it, and this process) is one stop.
 */
function stopSignalsFromTheStart(): {
  startAborted: AbortSignal;
  onStop(stop: (signal: StopSignal) => Promise<void>): void;
} {
  let signalDuringStart: StopSignal | undefined;
  const duringStart = new AbortController();
  let onStopSignal = (signal: StopSignal) => {
    signalDuringStart ??= signal;
    duringStart.abort(signal);
  };
  for (const signal of stopSignals) process.on(signal, () => onStopSignal(signal));
  return {
    startAborted: duringStart.signal,
    onStop(stop) {
      let stopping = false;
      onStopSignal = (signal) => {
        if (stopping) return;
        stopping = true;
        void stop(signal);
      };
      if (signalDuringStart) onStopSignal(signalDuringStart);
    },
  };
}

/** The role's parts, in order: models, database, upstreams, billing, operations, the service. */
async function startRole(
  config: Config,
  role: Role,
  logger: Logger,
  startAborted: AbortSignal,
): Promise<RunningRole> {
  const modelUpstreams = await installModelsFile(config);
  const database = await resolveDatabase(config, logger);
  // Whatever fails from here on stops what has started, the embedded database last, rather than leave it
  // running without its process (a later start would join it, and never stop it).
  let closeStarted = async () => {
    await database.local?.stop();
  };
  const startedOrClosed = <Part>(starting: Promise<Part>): Promise<Part> =>
    starting.catch(async (error: unknown) => {
      await closeStarted().catch((closing: unknown) =>
        logger.error({ err: closing }, "closing after a failed start failed"),
      );
      throw error;
    });
  const { upstreams, simulator } = await startedOrClosed(resolveUpstreams(config));
  const closeDatabase = closeStarted;
  closeStarted = async () => {
    await simulator?.close();
    await closeDatabase();
  };
  const ledgerSigningKey = await startedOrClosed(ledgerSigningKeyOf(config));
  if (!ledgerSigningKey && role !== "gateway")
    logger.warn("no LEDGER_SIGNING_KEY: the ledger's events are hash-chained but no checkpoint is sealed");
  const billing = await startedOrClosed(
    startBilling({
      config,
      databaseUrl: database.url,
      logger,
      runWorkers: role !== "gateway",
    }),
  );
  // Readiness and metrics; the shutdown calls `operations.readiness.startDraining()` first.
  const operations = createOperations({ queueBackend: billing.queueBackend, logger });
  // Closed after the service, whether it started or failed to: the embedded database last.
  const closeBesideTheService = async () => {
    await operations.close();
    await simulator?.close();
    await database.local?.stop();
  };
  closeStarted = async () => {
    await billing.close();
    await closeBesideTheService();
  };
  const service = await startedOrClosed(
    startService({
      startAborted,
      databaseUrl: database.url,
      eventStoreUrl: config.eventStoreUrl,
      sessionSecret: database.secrets.sessionSecret,
      keyPepper: database.secrets.keyPepper,
      adminToken: database.secrets.adminToken,
      upstreams,
      modelUpstreams,
      upstreamResilience: { modelEndpoints: modelEndpointsOf(), limits: config.upstreamResilience },
      charges: billing.charges,
      requestBodyBytesMax: config.requestBodyBytesMax,
      logger,
      adminRouter: billing.adminRouter,
      accountRouter: billing.accountRouter,
      // With a METRICS_PORT, /metrics (revenue by model, traffic) is served there alone, off the API's port.
      operationsRouter: (parts) => operations.router(parts, { metrics: config.metricsPort === undefined }),
      applicationName: `won-gateway-${role}`,
      // The edge leaves background work to workers: the projections run beside the reconciler.
      runProjections: role !== "gateway",
      ledgerSigningKey,
      settlementTimings: config.settlementTimings,
      oidc: config.oidc,
      webhookAllowPrivateNetworks: config.webhookAllowPrivateNetworks,
      publicUrl: config.publicUrl,
    }),
  );
  await billing.attach(service);
  return {
    database,
    billing,
    operations,
    service,
    // The workers and queues first (the charge queue sends what it still holds), which need the ledger;
    // the embedded database last: the other parts may still write to it until they are closed.
    closeAll: async () => {
      await billing.close();
      await service.close();
      await closeBesideTheService();
    },
  };
}

/**
 * A gateway listens on PORT; any role given a METRICS_PORT serves health and metrics there (a gateway then
 * serves /metrics there alone).
 */
async function listenAsRole(
  config: Config,
  role: Role,
  running: RunningRole,
  logger: Logger,
): Promise<string | undefined> {
  // A port in use or a host that is no address here is an operator's mistake, not a crash: stop what started,
  // then say which setting to change. Any other failure to listen stops what started too.
  const listenFailed = async (error: unknown, portVariable: "PORT" | "METRICS_PORT", port: number) => {
    await running.closeAll();
    throw configErrorOfListenFailure(error, { host: config.host, port, portVariable }) ?? error;
  };
  const metricsPort = config.metricsPort;
  if (metricsPort !== undefined)
    await running.operations
      .listen(metricsPort, config.host)
      .catch((error: unknown) => listenFailed(error, "METRICS_PORT", metricsPort));
  if (role === "worker") {
    logger.info({ role }, "worker running");
    return undefined;
  }
  const { url } = await running.service
    .listen(config.port, config.host)
    .catch((error: unknown) => listenFailed(error, "PORT", config.port));
  const baseUrl = `${url}/llm/v1`;
  logger.info({ baseUrl, role }, "gateway listening");
  return baseUrl;
}

async function printBanner(running: RunningRole, baseUrl: string | undefined): Promise<void> {
  if (!baseUrl) return;
  const { database, service } = running;
  // The first embedded start that gets this far (an earlier one may have failed before it) seeds the demo.
  const demo = database.local ? await seedDemoAccountOnce(service) : undefined;
  if (demo) {
    printFirstStartBanner({ baseUrl, adminToken: database.secrets.adminToken, ...demo });
    return;
  }
  printStartBanner({
    baseUrl,
    secrets: database.local
      ? { kind: "file", path: localSecretsFile, ledgerSigningKeyPath: localLedgerSigningKeyFile }
      : { kind: "environment" },
    demoSignInCode: database.local ? await demoSignInCodeOf(service) : undefined,
    adminApiOn: database.secrets.adminToken !== undefined,
  });
}

/** Readiness goes 503, no new connections; requests in flight finish (or are cut) and their usage is recorded. */
async function stopRole(
  config: Config,
  running: RunningRole,
  logger: Logger,
  signal: StopSignal,
): Promise<void> {
  const drainMs = config.settlementTimings.shutdownDrainMs;
  logger.info({ signal, drainMs }, "stopping: draining requests in flight");
  running.operations.readiness.startDraining();
  // Whatever hangs below, the process ends: a stop that never finishes is worse than a late one.
  setTimeout(
    () => {
      logger.error("stopping took too long; exiting anyway");
      process.exit(1);
    },
    drainMs + limits.shutdownCutGraceMs + limits.shutdownCloseMs,
  ).unref();
  const { requestsCut } = await running.service.drain();
  if (requestsCut > 0)
    logger.warn({ requestsCut }, "requests still running at the drain bound were cut (outcome shutdown)");
  await running.closeAll();
  logger.info({ signal }, "stopped");
  logger.flush();
  process.exit(0);
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) {
    process.stderr.write(`${error.message}\n`);
    process.exit(2);
  }
  // A dependency that answered with an error code (a refused connection, a database that does not exist), or
  // a database that accepted the connection and never answered (pg says so without a code), is one line, as
  // the ledger command says it; anything else is a defect, with where it happened.
  const operational =
    typeof (error as { code?: unknown })?.code === "string" ||
    /^(Connection terminated|timeout exceeded when trying to connect)/.test((error as Error)?.message ?? "");
  const said = operational ? (error as Error).message : ((error as Error).stack ?? String(error));
  process.stderr.write(`won-gateway failed to start: ${said}\n`);
  process.exit(1);
});
