import { SingleBar } from "cli-progress";
import { allProjections } from "../../projections";
import { ConfigError, limits, loadConfig } from "../config";
import { loadOrCreateLocalSecrets, startLocalDatabase } from "../database/local-data";
import {
  balanceChecksum,
  describeDifference,
  rebuildProjections,
  verifyProjections,
} from "./ledger-maintenance";
import { openLedger } from "./open-ledger";

/**
 * `npm run ledger -- rebuild`: drop and rebuild every projection from the log, print the balance checksum.
 * `npm run ledger -- verify`: fold the log afresh, compare with the live projections, exit 1 on any difference.
 */

const usage = "usage: npm run ledger -- rebuild | verify";

async function main(argv: readonly string[]): Promise<number> {
  const command = argv[0];
  if (command !== "rebuild" && command !== "verify") {
    process.stderr.write(`${usage}\n`);
    return 2;
  }
  const config = loadConfig();
  const localDatabase = config.databaseUrl
    ? undefined
    : await startLocalDatabase((await loadOrCreateLocalSecrets()).secrets.postgresPassword);
  const ledger = await openLedger({
    databaseUrl: config.databaseUrl ?? localDatabase!.url,
    eventStoreUrl: config.eventStoreUrl,
    applicationName: `ledger-${command}`,
    connectionsMax: 4,
  });
  try {
    const context = { pool: ledger.pool, store: ledger.store, projections: allProjections };
    return command === "rebuild" ? await rebuild(context) : await verify(context);
  } finally {
    await ledger.close();
    await localDatabase?.stop();
  }
}

async function rebuild(context: Parameters<typeof rebuildProjections>[0]): Promise<number> {
  const total = await countEvents(context);
  const bar = new SingleBar({
    format: "rebuilding projections [{bar}] {percentage}% | {value}/{total} events | {eta_formatted} left",
    stream: process.stdout,
    hideCursor: true,
  });
  bar.start(total ?? 0, 0);
  const startedAt = performance.now();
  const result = await rebuildProjections(context, {
    batchSizeMax: limits.rebuildBatchSizeMax,
    onProgress: (applied) => {
      if (total === undefined || applied > total) bar.setTotal(applied);
      bar.update(applied);
    },
  });
  bar.stop();
  const seconds = (performance.now() - startedAt) / 1_000;
  const rate = Math.round(result.eventCount / Math.max(seconds, 0.001));
  process.stdout.write(
    `rebuilt ${allProjections.length} projections from ${result.eventCount} events in ${seconds.toFixed(1)} s (${rate} events/s)\n` +
      `balances checksum: ${result.checksum.sha256} (${result.checksum.accountCount} accounts, total ₩${result.checksum.totalWon})\n`,
  );
  return 0;
}

async function verify(context: Parameters<typeof verifyProjections>[0]): Promise<number> {
  const differences = await verifyProjections(context);
  for (const difference of differences) process.stdout.write(`${describeDifference(difference)}\n`);
  if (differences.length > 0) {
    process.stdout.write(`verify: ${differences.length} difference(s) between the log and the projections\n`);
    return 1;
  }
  const checksum = await balanceChecksum(context.pool);
  process.stdout.write(
    `verify: projections match the log\nbalances checksum: ${checksum.sha256} (${checksum.accountCount} accounts, total ₩${checksum.totalWon})\n`,
  );
  return 0;
}

async function countEvents(context: Parameters<typeof verifyProjections>[0]): Promise<number | undefined> {
  if (context.store.kind !== "postgresql") return undefined;
  const result = await context.pool.query<{ count: string }>("SELECT count(*) AS count FROM ledger_events");
  return Number(result.rows[0]!.count);
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (error: unknown) => {
    const message = error instanceof ConfigError ? error.message : `ledger: ${(error as Error).message}`;
    process.stderr.write(`${message}\n`);
    process.exit(error instanceof ConfigError ? 2 : 1);
  },
);
