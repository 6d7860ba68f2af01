import type { Config } from "./config";
import { ConfigError } from "./kernel/config-error";

/**
 * Which part of the service a process runs, and the configurations each part refuses at start. `npm start`
 * runs every part (`all`); `--role=gateway` the HTTP edge alone and `--role=worker` the background work.
 * Kept apart from the composition root so that a deployment's wiring (docker-compose.yml) can be checked
 * against the same rules without starting anything.
 */

export type Role = "all" | "gateway" | "worker";

/** The one argument a process takes: anything else (`--role worker`, a typo) would run every role unheard. */
export function roleOf(argv: readonly string[]): Role {
  const stray = argv.find((argument) => !argument.startsWith("--role="));
  if (stray !== undefined)
    throw new ConfigError(
      `invalid configuration: unknown argument ${stray} (name a role as --role=gateway or --role=worker)`,
    );
  if (argv.length > 1)
    throw new ConfigError("invalid configuration: --role given twice (one process runs one role)");
  const role = argv[0]?.slice("--role=".length) ?? "all";
  if (role !== "all" && role !== "gateway" && role !== "worker")
    throw new ConfigError(`invalid configuration: --role ${role}`);
  return role;
}

export function refuseUnsupportedTopology(config: Config, role: Role): void {
  // Holds (C10) are decided and appended in one PostgreSQL statement, beside the log; EventStoreDB cannot
  // take part in that transaction, so the service's roles refuse it rather than bill without holds.
  if (config.eventStoreUrl)
    throw new ConfigError(
      "invalid configuration: EVENTSTORE_URL: the gateway and worker need the PostgreSQL event store (holds are placed atomically with the log); EventStoreDB is supported by `npm run ledger` and the event-store contract tests only",
    );
  // Embedded PostgreSQL belongs to one process; separate roles must meet in a database they share.
  if (role !== "all" && !config.databaseUrl)
    throw new ConfigError(`invalid configuration: DATABASE_URL is required with --role=${role}`);
  // A worker listens on METRICS_PORT alone; a gateway on PORT as well, which cannot be the same port.
  const { port, metricsPort } = config;
  if (role !== "worker" && metricsPort !== undefined && metricsPort !== 0 && metricsPort === port)
    throw new ConfigError(
      `invalid configuration: METRICS_PORT ${metricsPort} is also PORT; a gateway serves metrics on a port of their own`,
    );
}
