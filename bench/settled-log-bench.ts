import { randomUUID } from "node:crypto";
import pg from "pg";
import pino from "pino";
import { HoldRowCompletion, rowEventOf } from "../src/billing/holds/hold-row-completion";
import { PostgresUsageAuthorizations } from "../src/billing/holds/postgres-usage-authorizations";
import { SettledHoldsLog } from "../src/billing/holds/settled-holds-log";
import { assert } from "../src/kernel/assert";
import { openLedger } from "../src/ledger/store/open-ledger";
import { PostgresEventStore } from "../src/ledger/store/postgres-event-store";
import { createBenchDatabase } from "./bench-database";
import type { Figure } from "./measure";
import { cpuMsOf } from "./process-cpu";
import { toppedUp } from "./support/admission-fixtures";
import {
  activateBenchKey,
  backendPidOf,
  benchAuthorizationRequest,
  benchUsageOf,
} from "./support/hold-fixtures";

/**
 * The log written off the request path (src/billing/holds/settled-holds-log.ts): what one logged request —
 * its hold and its usage appended, chained and folded into the inline funds, its row deleted — costs the
 * writer's PostgreSQL backend in CPU, read from its /proc entry, in the batches it takes under load (32) and
 * after an outage, when settled rows wait (500). Beside it, from the same rounds, the floor of writing those
 * events: one `INSERT … SELECT` of the same rows into a copy of the log's table with its indexes (no
 * triggers, nothing chained or folded). Rows are placed and completed between measurements, as the gateway
 * places and completes them (holds nine to a statement, completions group-committed), and not counted.
 *
 * `BENCH_ONLY=holds npm run bench`.
 */

const batchSizes = [32, 500] as const;
const requestsPerRound = 2_000;
const rounds = 4;
const holdsPerStatement = 9;
const account = { kind: "user", id: "log-bench" } as const;
const keyId = randomUUID();

export async function runSettledLogBenchmarks(): Promise<Figure[]> {
  const database = await createBenchDatabase();
  const ledger = await openLedger({ databaseUrl: database.url, applicationName: "bench-log" });
  // The writer's statements on one connection, so its backend is the one measured.
  const writerPool = new pg.Pool({
    connectionString: database.url,
    max: 1,
    application_name: "bench-log-writer",
  });
  const copyClient = await ledger.pool.connect();
  try {
    const store = ledger.store;
    if (!(store instanceof PostgresEventStore))
      throw new Error("the log writer needs the PostgreSQL event store");
    await store.append(toppedUp(account, "1000000000000", "log-bench"));
    await activateBenchKey(copyClient, keyId, account);
    // The log's columns and indexes; its position filled from the log's, not generated.
    await copyClient.query(
      "CREATE TABLE bench_log_copy (LIKE ledger_events INCLUDING DEFAULTS INCLUDING INDEXES)",
    );
    const holds = new PostgresUsageAuthorizations(ledger.pool);
    const completion = new HoldRowCompletion(ledger.pool, 100);
    const writerBackend = await backendPidOf(writerPool);
    const copyBackend = await backendPidOf(copyClient);

    const settledRows = async (count: number): Promise<string[]> => {
      const requests = Array.from({ length: count }, () => benchAuthorizationRequest(keyId, account));
      for (let from = 0; from < count; from += holdsPerStatement) {
        const decisions = await holds.authorizeUsage(requests.slice(from, from + holdsPerStatement));
        assert(
          decisions.every((decision) => decision.kind === "held"),
          "a benchmark hold was refused: the account ran dry",
        );
      }
      await Promise.all(
        requests.map((request) =>
          completion.complete({
            requestId: request.data.requestId,
            settlement: rowEventOf(randomUUID(), benchUsageOf(request)),
            pendingWon: "0.0104",
          }),
        ),
      );
      return requests.map((request) => request.data.requestId);
    };

    const figures: Figure[] = [];
    for (const batchSize of batchSizes) {
      const writer = new SettledHoldsLog({
        pool: writerPool,
        log: store.appendsBeside,
        enqueueCharges: () => {},
        vacuum: { removed: () => {} },
        logger: pino({ level: "silent" }),
        batchSizeMax: batchSize,
        pollIntervalMs: 60_000,
        lingerMs: 0,
      });
      let writerCpuMs = 0;
      let copyCpuMs = 0;
      let logged = 0;
      // A round of warm-up (plans cached, pages read), not counted.
      for (let round = 0; round <= rounds; round++) {
        const requestIds = await settledRows(requestsPerRound);
        const lastPositionBefore = await lastLogPosition(copyClient);
        const writerCpuBefore = cpuMsOf(writerBackend);
        let loggedThisRound = 0;
        // By id, oldest first, as the writer logs its own process's settlements.
        for (let from = 0; from < requestIds.length; from += batchSize)
          loggedThisRound += await writer.writeBatch(requestIds.slice(from, from + batchSize));
        const writerCpuAfter = cpuMsOf(writerBackend);
        assert(loggedThisRound === requestIds.length, "the writer logged every settled row, once");
        const copyCpuBefore = cpuMsOf(copyBackend);
        const copied = await copyClient.query(
          "INSERT INTO bench_log_copy SELECT * FROM ledger_events WHERE position > $1",
          [lastPositionBefore],
        );
        const copyCpuAfter = cpuMsOf(copyBackend);
        assert(copied.rowCount === 2 * requestIds.length, "the copy holds each logged request's two events");
        if (round === 0) continue;
        writerCpuMs += writerCpuAfter - writerCpuBefore;
        copyCpuMs += copyCpuAfter - copyCpuBefore;
        logged += loggedThisRound;
      }
      await writer.close();
      figures.push({
        name: `PostgreSQL CPU per request logged, in batches of ${batchSize} (${logged} requests)`,
        value: (writerCpuMs * 1_000) / logged,
        unit: "µs",
        baseline: (copyCpuMs * 1_000) / logged,
        baselineName: "INSERT … SELECT of its 2 events",
      });
    }
    return figures;
  } finally {
    copyClient.release();
    await writerPool.end();
    await ledger.close();
    await database.drop();
  }
}

/** The log's last position now: a round's events are those after it. */
async function lastLogPosition(client: pg.PoolClient): Promise<string> {
  const result = await client.query<{ position: string }>(
    "SELECT coalesce(max(position), 0)::text AS position FROM ledger_events",
  );
  return result.rows[0]!.position;
}
