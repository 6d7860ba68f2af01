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

/**
 * Where BullMQ keeps its queues (C2): Redis when REDIS_URL is set, else BullMQ's PostgreSQL backend in the
 * ledger's database (schema `bullmq`, migrated on connect under BullMQ's own advisory lock). Everything
 * else in billing sees `Queue` and `Worker` only.
 */
export type QueueBackend =
  | {
      kind: "redis";
      redisUrl: string /** Redis key prefix; tests isolate themselves with it. */;
      prefix?: string;
    }
  | { kind: "postgresql"; databaseUrl: string };

export function queueBackendOf(options: {
  redisUrl: string | undefined;
  databaseUrl: string;
  prefix?: string;
}): QueueBackend {
  if (options.redisUrl === undefined) return { kind: "postgresql", databaseUrl: options.databaseUrl };
  return {
    kind: "redis",
    redisUrl: options.redisUrl,
    prefix: options.prefix ?? defaultRedisPrefixOf(options.databaseUrl),
  };
}

/**
 * Every process of one deployment shares a database, so naming the Redis keys after it keeps two
 * deployments (or two test databases) that share a Redis from taking each other's jobs.
 */
function defaultRedisPrefixOf(databaseUrl: string): string {
  const databaseName = decodeURIComponent(new URL(databaseUrl).pathname.slice(1)) || "postgres";
  return `won-gateway:${databaseName}`;
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
        ...(backend.prefix === undefined ? {} : { prefix: backend.prefix }),
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
        ...(backend.prefix === undefined ? {} : { prefix: backend.prefix }),
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
