import { randomUUID } from "node:crypto";
import OpenAI from "openai";
import pino, { type Logger } from "pino";
import { balancesProjection } from "../../projections/balances";
import { seedBilling } from "../../src/billing/commands/seed-billing";
import { assertSettlementTimings, type SettlementTimings } from "../../src/billing/holds/settlement-timings";
import type { ChargeEnqueuer } from "../../src/billing/queue/charge-enqueuer";
import { type Config, loadConfig, modelFamilies } from "../../src/config";
import type { ModelFamily } from "../../src/providers/provider";
import {
  type Simulator,
  type SimulatorOptions,
  startSimulator,
} from "../../src/providers/simulator/simulator";
import { type RunningService, type ServiceOptions, startService } from "../../src/service";
import { startBilling } from "../../src/start-billing";
import { removeQueueData } from "../workers/queue-test-support";
import { createTestDatabase, type TestDatabase } from "./database";

/**
 * The real service on an ephemeral port, against its own database, with every model family served by the
 * simulator (a fake upstream speaking each real protocol).
 */
export interface GatewayHarness {
  url: string;
  baseUrl: string;
  database: TestDatabase;
  service: RunningService;
  simulator: Simulator;
  enqueued: string[];
  /** Where this gateway hands its usages to be charged. */
  charges: ChargeEnqueuer;
  session(userId: string, organizationId?: string): Promise<string>;
  issueKey(
    sessionToken: string,
    options?: { isOrganization?: boolean; name?: string },
  ): Promise<{ uuid: string; key: string }>;
  topUp(account: { kind: "user" | "organization"; id: string }, amountWon: string): Promise<void>;
  openai(apiKey: string, options?: { maxRetries?: number; timeoutMs?: number }): OpenAI;
  close(): Promise<void>;
}

export const testSecrets = {
  sessionSecret: "test-session-secret-0123456789abcdef0123456789",
  keyPepper: "test-key-pepper-0123456789abcdef0123456789abcd",
  adminToken: "test-admin-token-0123456789abcdef0123456789ab",
};

/**
 * A service as a test starts one in process beside others: these secrets, every model family at
 * `upstreamUrl` (by default a closed port: a test that makes no generation request), charges dropped.
 */
export function serviceOptionsOf(
  databaseUrl: string,
  overrides: Partial<ServiceOptions> & { upstreamUrl?: string } = {},
): ServiceOptions {
  const { upstreamUrl = "http://127.0.0.1:9", ...options } = overrides;
  return {
    databaseUrl,
    ...testSecrets,
    upstreams: Object.fromEntries(
      modelFamilies.map((family) => [family, { baseUrl: upstreamUrl, apiKey: "upstream" }]),
    ) as Record<ModelFamily, { baseUrl: string; apiKey: string }>,
    charges: { enqueueCharge: () => {} },
    requestBodyBytesMax: 1024 * 1024,
    logger: pino({ level: "silent" }),
    ...options,
  };
}

/** The configuration with these timings in force, their relations checked as at a start. */
function withSettlementTimings(config: Config, timings: Partial<SettlementTimings> | undefined): Config {
  if (timings === undefined) return config;
  return {
    ...config,
    settlementTimings: assertSettlementTimings({ ...config.settlementTimings, ...timings }),
  };
}

export async function startGatewayHarness(
  options: {
    label?: string;
    simulator?: SimulatorOptions;
    charges?: ChargeEnqueuer;
    service?: Partial<ServiceOptions>;
    /**
     * Run the real billing: queue (Redis when given, else PostgreSQL), workers, admin and account APIs.
     * `queuePrefix`: the Redis keys' prefix, where the deployment's (named after its ledger's id) is not
     * wanted. `logger`: the queue's and the workers' (silent by default). `runWorkers: false`: a
     * gateway-role process, whose charges another process's workers take. `settlementTimings`: the
     * deployment's C10 timings as its workers (the orphan sweep) read them, beyond the few the environment
     * sets — give the gateway (`service`) the same, as every role of a deployment must agree on them.
     */
    billing?: {
      redisUrl?: string;
      queuePrefix?: string;
      logger?: Logger;
      runWorkers?: boolean;
      settlementTimings?: Partial<SettlementTimings>;
    };
    /** Another gateway process on this harness's database (left for its owner to drop). */
    database?: TestDatabase;
  } = {},
): Promise<GatewayHarness> {
  const database =
    options.database ?? (await createTestDatabase(options.label ?? "gateway", { migrated: true }));
  const simulator = await startSimulator(options.simulator ?? {});
  const enqueued: string[] = [];
  const logger = pino({ level: process.env.TEST_LOG_LEVEL ?? "silent" });
  const billing = options.billing
    ? await startBilling({
        config: withSettlementTimings(
          loadConfig({
            DATABASE_URL: database.url,
            ...(options.billing.redisUrl ? { REDIS_URL: options.billing.redisUrl } : {}),
            SESSION_SECRET: testSecrets.sessionSecret,
            KEY_PEPPER: testSecrets.keyPepper,
          }),
          options.billing.settlementTimings,
        ),
        databaseUrl: database.url,
        logger: options.billing.logger ?? logger,
        runWorkers: options.billing.runWorkers ?? true,
        ...(options.billing.queuePrefix === undefined ? {} : { queuePrefix: options.billing.queuePrefix }),
      })
    : undefined;
  const upstreams = Object.fromEntries(
    modelFamilies.map((family) => [family, { baseUrl: simulator.url, apiKey: `upstream-secret-${family}` }]),
  ) as Record<ModelFamily, { baseUrl: string; apiKey: string }>;
  const charges = billing?.charges ??
    options.charges ?? { enqueueCharge: (requestId: string) => void enqueued.push(requestId) };
  const service = await startService({
    databaseUrl: database.url,
    ...testSecrets,
    upstreams,
    charges,
    requestBodyBytesMax: 1024 * 1024,
    logger,
    // Test files share one server (and its connection limit) two at a time.
    databaseConnectionsMax: 8,
    ...(billing ? { adminRouter: billing.adminRouter, accountRouter: billing.accountRouter } : {}),
    ...options.service,
  });
  // Holds are priced (C10): every gateway needs the catalog prices and an FX rate, as a first start seeds.
  if (billing) await billing.attach(service);
  else
    await seedBilling({
      store: service.ledger.store,
      database: service.ledger.pool,
      waiter: service.waiter,
      clock: () => new Date(),
      logger,
      defaultFxRateKrwPerUsd: "1400",
    });
  const { url } = await service.listen(0, "127.0.0.1");
  return {
    url,
    baseUrl: `${url}/llm/v1`,
    database,
    service,
    simulator,
    enqueued,
    charges,
    session: async (userId, organizationId) =>
      (await service.sessions.mint({ userId, organizationId: organizationId ?? null }, 3_600)).token,
    issueKey: async (sessionToken, keyOptions = {}) => {
      const response = await fetch(`${url}/llm/apis`, {
        method: "POST",
        headers: { authorization: `Bearer ${sessionToken}`, "content-type": "application/json" },
        body: JSON.stringify({
          name: keyOptions.name ?? "test key",
          isOrganization: keyOptions.isOrganization ?? false,
        }),
      });
      if (response.status !== 201)
        throw new Error(`issuing a key failed: ${response.status} ${await response.text()}`);
      return (await response.json()) as { uuid: string; key: string };
    },
    topUp: async (account, amountWon) => {
      const appended = await service.ledger.store.append({
        streamId: `account-${account.kind}-${account.id}`,
        expectedVersion: "any",
        events: [
          {
            eventId: randomUUID(),
            event: {
              type: "CreditToppedUp",
              data: { account, amountWon, reference: "test" },
              metadata: { actor: "admin", occurredAt: new Date().toISOString() },
            },
          },
        ],
      });
      await service.waiter.waitFor(appended.position, [balancesProjection.name], 10_000);
    },
    openai: (apiKey, clientOptions = {}) =>
      new OpenAI({
        apiKey,
        baseURL: `${url}/llm/v1`,
        maxRetries: clientOptions.maxRetries ?? 0,
        timeout: clientOptions.timeoutMs ?? 20_000,
      }),
    close: async () => {
      await billing?.close();
      await service.close();
      await simulator.close();
      if (billing) await removeQueueData(billing.queueBackend);
      if (!options.database) await database.drop();
    },
  };
}
