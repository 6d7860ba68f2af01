import { z } from "zod";
import {
  assertSettlementTimings,
  type SettlementTimings,
  settableTimingsMinMs,
} from "./billing/holds/settlement-timings";
import { ConfigError } from "./kernel/config-error";
import {
  defaultSettlementTimings,
  type EnvironmentRange,
  environmentRanges,
  resilienceLimitDefaults,
} from "./kernel/limits";
import { isDecimalString } from "./kernel/money";
import { eventStoreConnectionStringProblem } from "./ledger/store/eventstoredb-connection-string";
import type { ModelFamily } from "./providers/provider";
import { assertResilienceLimits, type ResilienceLimits } from "./providers/resilience/resilience-limits";
import type { OidcSettings } from "./sessions/oidc-sign-in";

/**
 * Configuration: the environment (C2), parsed once at start; each variable's default and accepted range is in
 * src/kernel/limits.ts with every other limit. Invalid configuration, or values that contradict each other,
 * stop the process with one line naming the variable.
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

/** `PORT=0` is any free port; `PORT=` is unset (loadConfig), so the default port, not port 0. */
const port = z.coerce.number().int().min(0).max(65_535).optional();
/**
 * A URL its client can parse, so that a typo (a port that is no number) stops the start naming the variable,
 * not later as a bare "Invalid URL" — or never, where a queue's client retries it forever.
 */
const url = (protocols: readonly string[], parses: (value: string) => boolean = URL.canParse) =>
  optionalText.refine(
    (value) =>
      value === undefined ||
      (protocols.some((protocol) => value.startsWith(`${protocol}://`)) && parses(value)),
    `must be a URL starting with ${protocols.map((protocol) => `${protocol}://`).join(" or ")}`,
  );
/** As pg reads it: a Unix socket's URL names no host (`postgres://user@/db?host=/run/postgresql`). */
const parsesAsPostgresUrl = (value: string) =>
  URL.canParse(value) || URL.canParse(value.replace("@/", "@socket/"));
/** An EventStoreDB connection string may list a cluster's hosts (`esdb://a:2113,b:2113`): no URL parser reads it. */
const isAnything = () => true;
const secret = optionalText.refine(
  (value) => value === undefined || value.length >= 32,
  "must be at least 32 characters",
);

/** A JWT claim's name as an identity provider spells it (`sub`, `org_id`, `https://example.com/role`). */
const claimName = optionalText.refine(
  (value) => value === undefined || /^[\x21-\x7e]{1,256}$/.test(value),
  "must be a claim name (printable ASCII, no spaces)",
);

/** A whole number in its range (src/kernel/limits.ts, `environmentRanges`). */
const wholeIn = (range: EnvironmentRange) => z.coerce.number().int().min(range.min).max(range.max);
/** C10's timings: a duration in whole milliseconds. */
const milliseconds = wholeIn(environmentRanges.settlementTimingMs);

const familyVariables = Object.fromEntries(
  modelFamilies.flatMap((family) => [
    [`${family.toUpperCase()}_BASE_URL`, url(["http", "https"])],
    [`${family.toUpperCase()}_API_KEY`, optionalText],
  ]),
);

const environmentSchema = z.object({
  PORT: port.transform((value) => value ?? 8080),
  HOST: z.string().min(1).default("127.0.0.1"),
  DATABASE_URL: url(["postgres", "postgresql"], parsesAsPostgresUrl),
  EVENTSTORE_URL: url(["esdb", "esdb+discover"], isAnything).superRefine((value, context) => {
    const problem = value === undefined ? undefined : eventStoreConnectionStringProblem(value);
    if (problem !== undefined) context.addIssue({ code: "custom", message: problem });
  }),
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
  MAX_BODY_BYTES: wholeIn(environmentRanges.requestBodyBytes).default(
    environmentRanges.requestBodyBytesDefault,
  ),
  /** Models beyond (or replacing) the built-in catalog, YAML or JSON (docs/operations.md, "Models file"). */
  MODELS_FILE: optionalText,
  /** Worker-role processes serve /health and /metrics on this port; unset: no listener. */
  METRICS_PORT: port.optional(),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  SIMULATOR_LATENCY_MS: wholeIn(environmentRanges.simulatorLatencyMs).default(0),
  /** 0: unlimited (everything at once). */
  SIMULATOR_TOKENS_PER_SECOND: z.coerce
    .number()
    .min(environmentRanges.simulatorTokensPerSecond.min)
    .max(environmentRanges.simulatorTokensPerSecond.max)
    .default(0),
  // C10's timings (src/billing/holds/settlement-timings.ts): each role of a deployment must agree on them.
  STREAM_DEADLINE_MS: milliseconds.default(defaultSettlementTimings.streamDeadlineMs),
  SHUTDOWN_DRAIN_MS: milliseconds.default(defaultSettlementTimings.shutdownDrainMs),
  HOLD_LIFETIME_MS: milliseconds.default(defaultSettlementTimings.holdLifetimeMs),
  GATEWAY_PRESUMED_DEAD_AFTER_MS: milliseconds.default(defaultSettlementTimings.presumedDeadAfterMs),
  // Upstream retries and circuit breakers (C13; docs/upstream-resilience.md).
  UPSTREAM_ATTEMPTS_MAX: wholeIn(environmentRanges.upstreamAttemptsMax).default(
    resilienceLimitDefaults.attemptsMax,
  ),
  UPSTREAM_BACKOFF_BASE_MS: wholeIn(environmentRanges.upstreamBackoffBaseMs).default(
    resilienceLimitDefaults.backoffBaseMs,
  ),
  UPSTREAM_BACKOFF_MAX_MS: wholeIn(environmentRanges.upstreamBackoffMaxMs).default(
    resilienceLimitDefaults.backoffMaxMs,
  ),
  UPSTREAM_REQUEST_DEADLINE_MS: wholeIn(environmentRanges.upstreamRequestDeadlineMs).default(
    resilienceLimitDefaults.requestDeadlineMs,
  ),
  UPSTREAM_BREAKER_WINDOW_MS: wholeIn(environmentRanges.upstreamBreakerWindowMs).default(
    resilienceLimitDefaults.breakerWindowMs,
  ),
  UPSTREAM_BREAKER_REQUESTS_MIN: wholeIn(environmentRanges.upstreamBreakerRequestsMin).default(
    resilienceLimitDefaults.breakerRequestsMin,
  ),
  UPSTREAM_BREAKER_FAILURE_RATE: z.coerce
    .number()
    .gt(environmentRanges.upstreamBreakerFailureRate.min)
    .max(environmentRanges.upstreamBreakerFailureRate.max)
    .default(resilienceLimitDefaults.breakerFailureRateMin),
  UPSTREAM_BREAKER_OPEN_MS: wholeIn(environmentRanges.upstreamBreakerOpenMs).default(
    resilienceLimitDefaults.breakerOpenMs,
  ),
  UPSTREAM_BREAKER_HALF_OPEN_PROBES: wholeIn(environmentRanges.upstreamBreakerHalfOpenProbesMax).default(
    resilienceLimitDefaults.breakerHalfOpenProbesMax,
  ),
  // Console sign-in by OpenID Connect (C14; docs/console.md, "OpenID Connect sign-in"). No issuer: off.
  OIDC_ISSUER: url(["https", "http"]),
  OIDC_CLIENT_ID: optionalText,
  OIDC_CLIENT_SECRET: optionalText,
  OIDC_USER_CLAIM: claimName,
  OIDC_ORGANIZATION_CLAIM: claimName,
  OIDC_ROLE_CLAIM: claimName,
  // The origin browsers reach the gateway at, behind a TLS-terminating proxy (docs/console.md).
  PUBLIC_URL: url(["https", "http"]),
  // Webhooks to loopback, private and link-local addresses (C14): refused unless this is "true".
  WEBHOOK_ALLOW_PRIVATE_NETWORKS: z.enum(["true", "false"]).default("false"),
  ...familyVariables,
});

/** Every variable the configuration reads (compose must pass each through; .env.example lists them). */
export const configurationVariables = Object.keys(environmentSchema.shape);

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
  settlementTimings: SettlementTimings;
  /** Retries, deadline and circuit breakers of upstream calls (C13). */
  upstreamResilience: ResilienceLimits;
  /** Console sign-in by OpenID Connect; undefined when OIDC_ISSUER is unset. */
  oidc: OidcSettings | undefined;
  /** `PUBLIC_URL` as an origin; undefined: each request's own scheme and Host. */
  publicUrl: URL | undefined;
  /** Webhooks may go to loopback, private and link-local addresses (tests, closed networks). */
  webhookAllowPrivateNetworks: boolean;
}

/** Empty is unset, for every variable: `SHUTDOWN_DRAIN_MS=` (a compose file's blank) is the default. */
function setVariablesOf(environment: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(environment).filter(([, value]) => value === undefined || value.trim() !== ""),
  );
}

function parsedOrRefused<Parsed>(parsed: z.ZodSafeParseResult<Parsed>): Parsed {
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!;
    throw new ConfigError(`invalid configuration: ${issue.path.join(".")} ${issue.message}`);
  }
  return parsed.data;
}

/** What `npm run ledger` reads; only these variables are checked, so a service's own (`PORT`) never stops it. */
export type LedgerCommandConfig = Pick<Config, "databaseUrl" | "eventStoreUrl" | "ledgerSigningKey">;

export function loadLedgerCommandConfig(environment: NodeJS.ProcessEnv = process.env): LedgerCommandConfig {
  const values = parsedOrRefused(
    environmentSchema
      .pick({ DATABASE_URL: true, EVENTSTORE_URL: true, LEDGER_SIGNING_KEY: true })
      .safeParse(setVariablesOf(environment)),
  );
  return {
    databaseUrl: values.DATABASE_URL,
    eventStoreUrl: values.EVENTSTORE_URL,
    ledgerSigningKey: values.LEDGER_SIGNING_KEY,
  };
}

export function loadConfig(environment: NodeJS.ProcessEnv = process.env): Config {
  const values = parsedOrRefused(environmentSchema.safeParse(setVariablesOf(environment))) as z.infer<
    typeof environmentSchema
  > &
    Record<string, string | undefined>;
  const upstreams = Object.fromEntries(
    modelFamilies.map((family) => {
      const prefix = family.toUpperCase();
      const apiKey = values[`${prefix}_API_KEY`];
      const baseUrl = values[`${prefix}_BASE_URL`];
      // No key means the simulator: beside a base URL that is a misspelt or forgotten key, and the family's
      // clients would be charged for simulated text.
      if (baseUrl !== undefined && apiKey === undefined)
        throw new ConfigError(
          `invalid configuration: ${prefix}_BASE_URL is set but ${prefix}_API_KEY is not (an upstream that takes no key needs one all the same; unset both for the simulator)`,
        );
      return [family, { family, apiKey, baseUrl }];
    }),
  ) as Record<ModelFamily, UpstreamConfig>;
  const settlementTimings = settlementTimingsOf(values);
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
    settlementTimings,
    upstreamResilience: upstreamResilienceOf(values),
    oidc: oidcOf(values),
    publicUrl: publicUrlOf(values.PUBLIC_URL),
    webhookAllowPrivateNetworks: values.WEBHOOK_ALLOW_PRIVATE_NETWORKS === "true",
  };
}

const loopbackHosts = new Set(["127.0.0.1", "[::1]", "localhost"]);

/** The OpenID Connect settings, or undefined without an issuer; half a configuration stops the start. */
function oidcOf(values: z.infer<typeof environmentSchema>): OidcSettings | undefined {
  const issuer = values.OIDC_ISSUER;
  if (issuer === undefined) {
    const stray = (["OIDC_CLIENT_ID", "OIDC_CLIENT_SECRET"] as const).find((name) => values[name]);
    if (stray) throw new ConfigError(`invalid configuration: ${stray} is set but OIDC_ISSUER is not`);
    return undefined;
  }
  // A role is a role in an organization (C14): without the organization's claim no sign-in would carry one.
  if (values.OIDC_ROLE_CLAIM && !values.OIDC_ORGANIZATION_CLAIM)
    throw new ConfigError(
      "invalid configuration: OIDC_ROLE_CLAIM is set but OIDC_ORGANIZATION_CLAIM is not (a role is one in an organization)",
    );
  const issuerUrl = new URL(issuer);
  // Plain http would hand codes and tokens to anyone on the path; only a provider on this machine may use it.
  if (issuerUrl.protocol === "http:" && !loopbackHosts.has(issuerUrl.hostname))
    throw new ConfigError(
      "invalid configuration: OIDC_ISSUER must be https:// (http only on a loopback host)",
    );
  if (!values.OIDC_CLIENT_ID)
    throw new ConfigError("invalid configuration: OIDC_CLIENT_ID is required with OIDC_ISSUER");
  return {
    issuer,
    clientId: values.OIDC_CLIENT_ID,
    clientSecret: values.OIDC_CLIENT_SECRET,
    userClaim: values.OIDC_USER_CLAIM ?? "sub",
    organizationClaim: values.OIDC_ORGANIZATION_CLAIM,
    roleClaim: values.OIDC_ROLE_CLAIM,
  };
}

/** `PUBLIC_URL` names an origin: a path, query or credentials would be dropped from every URL built on it. */
function publicUrlOf(value: string | undefined): URL | undefined {
  if (value === undefined) return undefined;
  const parsed = URL.canParse(value) ? new URL(value) : undefined;
  if (!parsed || !isOriginOnly(parsed))
    throw new ConfigError(
      "invalid configuration: PUBLIC_URL must be an origin such as https://llm.example.com (no path, query or credentials)",
    );
  return parsed;
}

function isOriginOnly(url: URL): boolean {
  return url.pathname === "/" && !url.search && !url.hash && !url.username && !url.password;
}

/** The upstream retry and breaker limits the environment sets; their one relation is refused by name. */
function upstreamResilienceOf(values: z.infer<typeof environmentSchema>): ResilienceLimits {
  if (values.UPSTREAM_BACKOFF_BASE_MS > values.UPSTREAM_BACKOFF_MAX_MS)
    throw new ConfigError(
      `invalid configuration: UPSTREAM_BACKOFF_BASE_MS ${values.UPSTREAM_BACKOFF_BASE_MS} must be at most UPSTREAM_BACKOFF_MAX_MS ${values.UPSTREAM_BACKOFF_MAX_MS} (the first retry's wait, and the longest)`,
    );
  return assertResilienceLimits({
    attemptsMax: values.UPSTREAM_ATTEMPTS_MAX,
    backoffBaseMs: values.UPSTREAM_BACKOFF_BASE_MS,
    backoffMaxMs: values.UPSTREAM_BACKOFF_MAX_MS,
    requestDeadlineMs: values.UPSTREAM_REQUEST_DEADLINE_MS,
    breakerWindowMs: values.UPSTREAM_BREAKER_WINDOW_MS,
    breakerRequestsMin: values.UPSTREAM_BREAKER_REQUESTS_MIN,
    breakerFailureRateMin: values.UPSTREAM_BREAKER_FAILURE_RATE,
    breakerOpenMs: values.UPSTREAM_BREAKER_OPEN_MS,
    breakerHalfOpenProbesMax: values.UPSTREAM_BREAKER_HALF_OPEN_PROBES,
  });
}

/** The timings the environment sets, each at least what the fixed ones need, with their relations checked. */
function settlementTimingsOf(values: z.infer<typeof environmentSchema>): SettlementTimings {
  const timings = {
    ...defaultSettlementTimings,
    streamDeadlineMs: values.STREAM_DEADLINE_MS,
    shutdownDrainMs: values.SHUTDOWN_DRAIN_MS,
    holdLifetimeMs: values.HOLD_LIFETIME_MS,
    presumedDeadAfterMs: values.GATEWAY_PRESUMED_DEAD_AFTER_MS,
  };
  const leastMs = settableTimingsMinMs(timings);
  const why = `what heartbeats every ${timings.heartbeatIntervalMs} ms and progress records every ${timings.progressIntervalMs} ms need`;
  for (const [variable, name] of [
    ["HOLD_LIFETIME_MS", "holdLifetimeMs"],
    ["GATEWAY_PRESUMED_DEAD_AFTER_MS", "presumedDeadAfterMs"],
  ] as const)
    if (timings[name] < leastMs[name])
      throw new ConfigError(
        `invalid configuration: ${variable} ${timings[name]} must be at least ${leastMs[name]} (${why})`,
      );
  return assertSettlementTimings(timings);
}
