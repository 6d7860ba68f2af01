import { startBilling } from "./billing/start-billing";
import { type Config, ConfigError, loadConfig, modelFamilies } from "./config";
import { type LocalDatabase, loadOrCreateLocalSecrets, startLocalDatabase } from "./database/local-data";
import { printFirstStartBanner, seedDemoAccount } from "./demo-account";
import type { FamilyUpstream } from "./gateway/generation/upstream-registry";
import { ledgerSigningKeyOf } from "./ledger/ledger-signing-key-setting";
import { createLogger, type Logger } from "./logger";
import type { ModelFamily } from "./providers/provider";
import { type Simulator, startSimulator } from "./providers/simulator/simulator";
import { startService } from "./service";

/**
 * Composition root. `npm start` runs every part in one process; `--role=gateway` runs the HTTP edge alone
 * and `--role=worker` the background work (projections, reconciler, sweeper, FX refresh), any number of
 * each, sharing PostgreSQL (and Redis). A scale-out deployment needs at least one worker.
 */

type Role = "all" | "gateway" | "worker";

function roleOf(argv: readonly string[]): Role {
  const role = argv.find((argument) => argument.startsWith("--role="))?.slice("--role=".length) ?? "all";
  if (role !== "all" && role !== "gateway" && role !== "worker")
    throw new ConfigError(`invalid configuration: --role ${role}`);
  return role;
}

interface Secrets {
  sessionSecret: string;
  keyPepper: string;
  adminToken: string | undefined;
}

async function resolveDatabase(
  config: Config,
  logger: Logger,
): Promise<{ url: string; local?: LocalDatabase; secrets: Secrets; firstStart: boolean }> {
  if (config.databaseUrl) {
    if (!config.sessionSecret)
      throw new ConfigError("invalid configuration: SESSION_SECRET is required when DATABASE_URL is set");
    if (!config.keyPepper)
      throw new ConfigError("invalid configuration: KEY_PEPPER is required when DATABASE_URL is set");
    return {
      url: config.databaseUrl,
      secrets: {
        sessionSecret: config.sessionSecret,
        keyPepper: config.keyPepper,
        adminToken: config.adminToken,
      },
      firstStart: false,
    };
  }
  const { secrets, created } = await loadOrCreateLocalSecrets();
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
    firstStart: created,
  };
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

async function main(): Promise<void> {
  const config = loadConfig();
  const role = roleOf(process.argv.slice(2));
  // Embedded PostgreSQL belongs to one process; separate roles must meet in a database they share.
  if (role !== "all" && !config.databaseUrl)
    throw new ConfigError(`invalid configuration: DATABASE_URL is required with --role=${role}`);
  const logger = createLogger(config.logLevel);
  const database = await resolveDatabase(config, logger);
  const { upstreams, simulator } = await resolveUpstreams(config);
  const ledgerSigningKey = await ledgerSigningKeyOf(config);
  if (!ledgerSigningKey && role !== "gateway")
    logger.warn("no LEDGER_SIGNING_KEY: the ledger's events are hash-chained but no checkpoint is sealed");
  const billing = await startBilling({
    config,
    databaseUrl: database.url,
    logger,
    runWorkers: role !== "gateway",
  });
  const service = await startService({
    databaseUrl: database.url,
    eventStoreUrl: config.eventStoreUrl,
    sessionSecret: database.secrets.sessionSecret,
    keyPepper: database.secrets.keyPepper,
    adminToken: database.secrets.adminToken,
    upstreams,
    charges: billing.charges,
    requestBodyBytesMax: config.requestBodyBytesMax,
    logger,
    adminRouter: billing.adminRouter,
    accountRouter: billing.accountRouter,
    applicationName: `won-gateway-${role}`,
    // The edge leaves background work to workers: the projections run beside the reconciler.
    runProjections: role !== "gateway",
    ledgerSigningKey,
  });
  await billing.attach(service);

  let baseUrl: string | undefined;
  if (role !== "worker") {
    const { url } = await service.listen(config.port, config.host);
    baseUrl = `${url}/llm/v1`;
    logger.info({ baseUrl, role }, "gateway listening");
  }
  if (role === "worker") logger.info({ role }, "worker running");
  if (database.firstStart && baseUrl) {
    const demo = await seedDemoAccount(service);
    printFirstStartBanner({ baseUrl, adminToken: database.secrets.adminToken, ...demo });
  }

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down");
    // Workers first: they need the ledger, which the service closes.
    await billing.close();
    await service.close();
    await simulator?.close();
    await database.local?.stop();
    process.exit(0);
  };
  process.on("SIGINT", () => void stop("SIGINT"));
  process.on("SIGTERM", () => void stop("SIGTERM"));
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) {
    process.stderr.write(`${error.message}\n`);
    process.exit(2);
  }
  process.stderr.write(`won-gateway failed to start: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
