import { z } from "zod";
import { isDecimalString } from "./billing/money";
import type { ModelFamily } from "./providers/provider";
import { type ResilienceLimits, resilienceLimitDefaults } from "./providers/resilience/resilience-limits";

/**
 * Configuration: the environment (C2), parsed once at start, and every limit the service enforces, named
 * with its unit. Invalid configuration stops the process with one line naming the variable.
 */

export const modelFamilies = [
  "alpha",
  "beta",
  "gamma",
  "delta",
  "epsilon",
  "zeta",
] as const satisfies readonly ModelFamily[];

const optionalText = z
  .string()
  .optional()
  .transform((value) => (value === undefined || value.trim() === "" ? undefined : value.trim()));

const port = z.coerce.number().int().min(0).max(65_535);
const url = (protocols: readonly string[]) =>
  optionalText.refine(
    (value) => value === undefined || protocols.some((protocol) => value.startsWith(`${protocol}://`)),
    `must be a URL starting with ${protocols.map((protocol) => `${protocol}://`).join(" or ")}`,
  );
const secret = optionalText.refine(
  (value) => value === undefined || value.length >= 32,
  "must be at least 32 characters",
);

const familyVariables = Object.fromEntries(
  modelFamilies.flatMap((family) => [
    [`${family.toUpperCase()}_BASE_URL`, url(["http", "https"])],
    [`${family.toUpperCase()}_API_KEY`, optionalText],
  ]),
);

const environmentSchema = z.object({
  PORT: port.default(8080),
  HOST: z.string().min(1).default("127.0.0.1"),
  DATABASE_URL: url(["postgres", "postgresql"]),
  EVENTSTORE_URL: url(["esdb", "esdb+discover"]),
  REDIS_URL: url(["redis", "rediss"]),
  ADMIN_TOKEN: secret,
  SESSION_SECRET: secret,
  KEY_PEPPER: secret,
  /** Ed25519 seed (base64) or PKCS#8 PEM; checked where it is parsed (ledger-signing-key.ts). */
  LEDGER_SIGNING_KEY: optionalText,
  KOREAEXIM_AUTHKEY: optionalText,
  KOREAEXIM_URL: url(["http", "https"]).default(
    "https://oapi.koreaexim.go.kr/site/program/financial/exchangeJSON",
  ),
  FX_USDKRW_DEFAULT: z
    .string()
    .default("1400")
    .refine(
      (value) => isDecimalString(value) && Number(value) > 0,
      "must be a positive decimal such as 1400",
    ),
  MAX_BODY_BYTES: z.coerce
    .number()
    .int()
    .min(1_024)
    .max(256 * 1024 * 1024)
    .default(4_194_304),
  /** Models beyond (or replacing) the built-in catalog, YAML or JSON (README, "Models file"). */
  MODELS_FILE: optionalText,
  /** Worker-role processes serve /health and /metrics on this port; unset: no listener. */
  METRICS_PORT: port.optional(),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  SIMULATOR_LATENCY_MS: z.coerce.number().int().min(0).max(600_000).default(0),
  /** 0: unlimited (everything at once). */
  SIMULATOR_TOKENS_PER_SECOND: z.coerce.number().min(0).max(1_000_000).default(0),
  // Upstream retries and circuit breakers (C13; docs/upstream-resilience.md).
  UPSTREAM_ATTEMPTS_MAX: z.coerce.number().int().min(1).max(32).default(resilienceLimitDefaults.attemptsMax),
  UPSTREAM_BACKOFF_BASE_MS: z.coerce
    .number()
    .int()
    .min(1)
    .max(60_000)
    .default(resilienceLimitDefaults.backoffBaseMs),
  UPSTREAM_BACKOFF_MAX_MS: z.coerce
    .number()
    .int()
    .min(1)
    .max(600_000)
    .default(resilienceLimitDefaults.backoffMaxMs),
  UPSTREAM_REQUEST_DEADLINE_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .max(3_600_000)
    .default(resilienceLimitDefaults.requestDeadlineMs),
  UPSTREAM_BREAKER_WINDOW_MS: z.coerce
    .number()
    .int()
    .min(1_000)
    .max(3_600_000)
    .default(resilienceLimitDefaults.breakerWindowMs),
  UPSTREAM_BREAKER_ATTEMPTS_MIN: z.coerce
    .number()
    .int()
    .min(1)
    .max(100_000)
    .default(resilienceLimitDefaults.breakerAttemptsMin),
  UPSTREAM_BREAKER_FAILURE_RATE: z.coerce
    .number()
    .gt(0)
    .max(1)
    .default(resilienceLimitDefaults.breakerFailureRateMin),
  UPSTREAM_BREAKER_OPEN_MS: z.coerce
    .number()
    .int()
    .min(100)
    .max(3_600_000)
    .default(resilienceLimitDefaults.breakerOpenMs),
  UPSTREAM_BREAKER_HALF_OPEN_PROBES: z.coerce
    .number()
    .int()
    .min(1)
    .max(1_000)
    .default(resilienceLimitDefaults.breakerHalfOpenProbesMax),
  ...familyVariables,
});

export interface UpstreamConfig {
  family: ModelFamily;
  /** Absent: the family is served by the built-in simulator. */
  apiKey: string | undefined;
  baseUrl: string | undefined;
}

export interface Config {
  port: number;
  host: string;
  databaseUrl: string | undefined;
  eventStoreUrl: string | undefined;
  redisUrl: string | undefined;
  adminToken: string | undefined;
  sessionSecret: string | undefined;
  keyPepper: string | undefined;
  ledgerSigningKey: string | undefined;
  koreaEximAuthKey: string | undefined;
  koreaEximUrl: string;
  defaultFxRateKrwPerUsd: string;
  requestBodyBytesMax: number;
  logLevel: z.infer<typeof environmentSchema>["LOG_LEVEL"];
  metricsPort: number | undefined;
  modelsFile: string | undefined;
  simulatorLatencyMs: number;
  simulatorTokensPerSecond: number;
  upstreams: Record<ModelFamily, UpstreamConfig>;
  /** Retries, deadline and circuit breakers of upstream calls (C13). */
  upstreamResilience: ResilienceLimits;
}

/** Limits that are not configuration: named here so every bound in the service is in one place. */
export const limits = {
  databaseConnectionsMax: 20,
  eventStorePollIntervalMs: 1_000,
  projectionBatchSizeMax: 1_000,
  /** The live runner gathers light traffic into fewer transactions; read-your-writes waits this much more. */
  projectionLingerMs: 10,
  projectionStandbyRetryMs: 2_000,
  projectionWaitTimeoutMs: 10_000,
  /** Read-your-writes waiters re-read checkpoints this often when no notification arrives. */
  projectionWaitPollIntervalMs: 100,
  rebuildBatchSizeMax: 10_000,
  /** Projection rows a rebuild holds in memory before writing them out (≈ 1 KB each at most). */
  rebuildRowsInMemoryMax: 100_000,
  /** Events a rebuild in SQL parses and folds per step; progress is reported after each. */
  rebuildChunkEventsMax: 250_000,
  /** A checkpoint seals at most this many events, and seals as soon as this many are sealable. */
  checkpointEventsMax: 10_000,
  /** Fewer events are sealed once the last checkpoint is this old. */
  checkpointIntervalMs: 10_000,
  checkpointPollIntervalMs: 1_000,
  checkpointsPerPassMax: 1_000,
  /** API keys whose admission data a gateway process keeps in memory. */
  admissionCacheEntriesMax: 10_000,
  /** A cached key unused this long is dropped at the next refresh. */
  admissionCacheIdleMs: 60_000,
  /** Safety net for a lost NOTIFY: the admission cache re-reads its keys this often regardless. */
  admissionCacheRefreshIntervalMs: 1_000,
  /** While the database is away, one log line per this interval about failed admission refreshes. */
  admissionCacheErrorLogIntervalMs: 60_000,
  usageAppendBatchSizeMax: 500,
  /** Holds placed by one statement (C10); concurrent requests share it. */
  holdBatchSizeMax: 500,
  /** Output tokens a hold assumes when a request names no maximum (`max_tokens`, `max_output_tokens`). */
  holdExpectedOutputTokens: 1_024,
  /** Near the limit — room for fewer than this many such holds — the hold goes before the upstream call. */
  holdFirstBelowHolds: 10,
  /** A hold still open this long after its request started is settled as interrupted: the upstream's own
   * 10-minute timeout, and a minute to settle. */
  holdLifetimeMs: 660_000,
  /** A refused hold waits at most this long for the account's answered requests to settle, then retries. */
  holdRefusalRecheckWaitMs: 2_000,
  /** How long a gateway process prices holds with the prices, rate and discount it read. */
  holdPricingTtlMs: 5_000,
  holdPricingEntriesMax: 10_000,
  /** Usage settlements waiting to be written; past this the gateway answers 503 instead of admitting. */
  usageOutboxEntriesMax: 50_000,
  /** Backoff between attempts at writing a settlement while the ledger is away (the last repeats). */
  usageOutboxRetryDelaysMs: [50, 250, 1_000, 2_000, 5_000],
  /** At stop, how long the gateway waits for answered requests' settlements to be written. */
  usageOutboxDrainMs: 10_000,
  /** Each gateway process writes its heartbeat this often; see billingLimits.gatewayPresumedDeadAfterMs. */
  gatewayHeartbeatIntervalMs: 2_000,

  httpKeepAliveTimeoutMs: 65_000,
  httpHeadersTimeoutMs: 66_000,
  /**
   * On SIGTERM/SIGINT, requests in flight (streams included) get this long to finish before their
   * connections are cut; new connections are refused from the first moment.
   */
  shutdownDrainMs: 10_000,
  /** After cutting requests still running at the drain bound, their handlers get this long to record usage. */
  shutdownCutGraceMs: 1_000,
  /** After the drain, closing queues, workers and pools gets this long before the process exits anyway. */
  shutdownCloseMs: 20_000,
  /** Each readiness check (and each scrape-time probe) of a dependency gives up after this long. */
  readinessProbeTimeoutMs: 2_000,
  /** Ready while the oldest ledger event not yet applied by every projection is at most this old. */
  readinessProjectionLagSecondsMax: 30,
} as const;

export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

export function loadConfig(environment: NodeJS.ProcessEnv = process.env): Config {
  const parsed = environmentSchema.safeParse(environment);
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ConfigError(`invalid configuration: ${issue.path.join(".")} ${issue.message}`);
  }
  const values = parsed.data as z.infer<typeof environmentSchema> & Record<string, string | undefined>;
  const upstreams = Object.fromEntries(
    modelFamilies.map((family) => {
      const prefix = family.toUpperCase();
      return [family, { family, apiKey: values[`${prefix}_API_KEY`], baseUrl: values[`${prefix}_BASE_URL`] }];
    }),
  ) as Record<ModelFamily, UpstreamConfig>;
  return {
    port: values.PORT,
    host: values.HOST,
    databaseUrl: values.DATABASE_URL,
    eventStoreUrl: values.EVENTSTORE_URL,
    redisUrl: values.REDIS_URL,
    adminToken: values.ADMIN_TOKEN,
    sessionSecret: values.SESSION_SECRET,
    keyPepper: values.KEY_PEPPER,
    ledgerSigningKey: values.LEDGER_SIGNING_KEY,
    koreaEximAuthKey: values.KOREAEXIM_AUTHKEY,
    koreaEximUrl: values.KOREAEXIM_URL,
    defaultFxRateKrwPerUsd: values.FX_USDKRW_DEFAULT,
    requestBodyBytesMax: values.MAX_BODY_BYTES,
    logLevel: values.LOG_LEVEL,
    metricsPort: values.METRICS_PORT,
    modelsFile: values.MODELS_FILE,
    simulatorLatencyMs: values.SIMULATOR_LATENCY_MS,
    simulatorTokensPerSecond: values.SIMULATOR_TOKENS_PER_SECOND,
    upstreams,
    upstreamResilience: {
      attemptsMax: values.UPSTREAM_ATTEMPTS_MAX,
      backoffBaseMs: values.UPSTREAM_BACKOFF_BASE_MS,
      backoffMaxMs: values.UPSTREAM_BACKOFF_MAX_MS,
      requestDeadlineMs: values.UPSTREAM_REQUEST_DEADLINE_MS,
      breakerWindowMs: values.UPSTREAM_BREAKER_WINDOW_MS,
      breakerAttemptsMin: values.UPSTREAM_BREAKER_ATTEMPTS_MIN,
      breakerFailureRateMin: values.UPSTREAM_BREAKER_FAILURE_RATE,
      breakerOpenMs: values.UPSTREAM_BREAKER_OPEN_MS,
      breakerHalfOpenProbesMax: values.UPSTREAM_BREAKER_HALF_OPEN_PROBES,
    },
  };
}
