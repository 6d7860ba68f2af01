import {
  createPostgresBackend,
  type JobsOptions,
  type Processor,
  Queue,
  type RedisOptions,
  Worker,
  type WorkerOptions,
} from "bullmq";
import { billingLimits } from "../../kernel/limits";
import { ledgerIdAt } from "../../ledger/store/ledger-id";

/**
 * Where BullMQ keeps its queues (C2): Redis when REDIS_URL is set, else BullMQ's PostgreSQL backend in the
 * ledger's database (schema `bullmq`, migrated on connect under BullMQ's own advisory lock). Everything
 * else in billing sees `Queue` and `Worker` only.
 */
export type QueueBackend =
  | {
      kind: "redis";
      redisUrl: string;
      /** Every key's prefix: the deployment's (`redisPrefixOfLedger`), or a test's or a benchmark's own. */
      prefix: string;
    }
  | { kind: "postgresql"; databaseUrl: string };

/**
 * The queue backend of the deployment whose ledger is at `databaseUrl`. On Redis, without a `prefix`, its
 * keys are named after the ledger's id, read from the database here: `schema: "migrate"` (the service's
 * start, whose queues open before its ledger does) brings the schema to this release's first; `as-found`
 * (the default) refuses a database that holds no ledger id.
 */
export async function queueBackendOf(options: {
  redisUrl: string | undefined;
  databaseUrl: string;
  prefix?: string;
  schema?: "migrate" | "as-found";
}): Promise<QueueBackend> {
  if (options.redisUrl === undefined) return { kind: "postgresql", databaseUrl: options.databaseUrl };
  const prefix =
    options.prefix ??
    redisPrefixOfLedger(
      await ledgerIdAt(options.databaseUrl, {
        applicationName: "won-gateway-queue-prefix",
        schema: options.schema ?? "as-found",
      }),
    );
  return { kind: "redis", redisUrl: options.redisUrl, prefix };
}

/**
 * Two deployments that share a Redis must not take each other's jobs — a charge job taken by the other's
 * worker finds no usage there and is dropped, its charge left to the sweep; a day's FX refresh runs against
 * the other's ledger — while every process of one deployment must share them. The database's name keeps a
 * deployment together but not apart from another (staging and production both `gateway`, on two servers);
 * its host would keep them apart but not together (a pooler and an address split one deployment). The
 * ledger's id does both: every process of a deployment reads it from the one database (ledger-id.ts).
 */
function redisPrefixOfLedger(ledgerId: string): string {
  return `won-gateway:${ledgerId}`;
}

/**
 * Who uses a queue connection decides how it behaves when Redis is away (BullMQ "Connections" and
 * "Failing fast when Redis is down"):
 * - `request-path`: a producer on the HTTP path must never wait for Redis, so commands are not queued
 *   offline and fail after one retry; the caller bounds the wait besides.
 * - `background`: producers in workers (sweeper, schedulers) may wait and retry.
 * Workers get BullMQ's required `maxRetriesPerRequest: null` (blocking commands) in `openWorker`.
 */
export type QueueRole = "request-path" | "background";

function redisConnectionOf(redisUrl: string, role: QueueRole | "worker"): RedisOptions {
  const common = {
    url: redisUrl,
    connectTimeout: billingLimits.redisConnectTimeoutMs,
    // Reconnect forever (Redis comes back), but never faster than every 200 ms nor slower than the max.
    retryStrategy: (attempt: number) => Math.min(attempt * 200, billingLimits.redisReconnectDelayMaxMs),
  };
  switch (role) {
    case "request-path":
      return { ...common, enableOfflineQueue: false, maxRetriesPerRequest: 1 };
    case "background":
      return { ...common, maxRetriesPerRequest: 3 };
    case "worker":
      return { ...common, maxRetriesPerRequest: null };
    default: {
      const unreachable: never = role;
      throw new Error(`unhandled queue role ${String(unreachable)}`);
    }
  }
}

function postgresConnectionOf(databaseUrl: string, applicationName: string) {
  return {
    connectionString: databaseUrl,
    migrate: true,
    max: billingLimits.queueDatabaseConnectionsMax,
    application_name: applicationName,
    connectionTimeoutMillis: 10_000,
  };
}

export function openQueue<Data>(
  name: string,
  backend: QueueBackend,
  options: { role: QueueRole; defaultJobOptions: JobsOptions },
): Queue<Data> {
  switch (backend.kind) {
    case "redis":
      return new Queue<Data>(name, {
        connection: redisConnectionOf(backend.redisUrl, options.role),
        defaultJobOptions: options.defaultJobOptions,
        prefix: backend.prefix,
      });
    case "postgresql":
      // The PostgreSQL-backed queue has the same API; its type differs only in the backend parameter.
      return new Queue(
        name,
        {
          connection: postgresConnectionOf(backend.databaseUrl, `queue-${name}`),
          defaultJobOptions: options.defaultJobOptions,
        },
        createPostgresBackend,
      ) as unknown as Queue<Data>;
    default: {
      const unreachable: never = backend;
      throw new Error(`unhandled queue backend ${JSON.stringify(unreachable)}`);
    }
  }
}

export type WorkerSettings = Omit<WorkerOptions, "connection" | "prefix" | "autorun">;

export function openWorker<Data>(
  name: string,
  processor: Processor<Data>,
  backend: QueueBackend,
  settings: WorkerSettings,
): Worker<Data> {
  switch (backend.kind) {
    case "redis":
      return new Worker<Data>(name, processor, {
        ...settings,
        connection: redisConnectionOf(backend.redisUrl, "worker"),
        prefix: backend.prefix,
      });
    case "postgresql":
      return new Worker(
        name,
        processor,
        { ...settings, connection: postgresConnectionOf(backend.databaseUrl, `worker-${name}`) },
        createPostgresBackend,
      ) as unknown as Worker<Data>;
    default: {
      const unreachable: never = backend;
      throw new Error(`unhandled queue backend ${JSON.stringify(unreachable)}`);
    }
  }
}
