import { randomUUID } from "node:crypto";
import { PostgresUsageAuthorizations } from "../src/billing/holds/postgres-usage-authorizations";
import { openLedger } from "../src/ledger/store/open-ledger";
import { PostgresEventStore } from "../src/ledger/store/postgres-event-store";
import { createBenchDatabase } from "./bench-database";
import type { Figure } from "./measure";
import { cpuMsOf } from "./process-cpu";
import { toppedUp } from "./support/admission-fixtures";
import { activateBenchKey, backendPidOf, benchAuthorizationRequest } from "./support/hold-fixtures";

/**
 * Issue 26: what one hold (`ledger_authorize_usage`, the statement every request commits before any output)
 * costs PostgreSQL in CPU, read from its backend's /proc entry, beside what the floor's one-row INSERT and
 * commit costs its own backend, in the same run. In batches of one (a request alone, as at one connection)
 * and of nine (as the gateway batches them at 32 connections on one account). Taken in alternating rounds,
 * so the machine's drift weighs on both sides alike. No contention: this is the statement's own cost.
 *
 * `BENCH_ONLY=holds npm run bench`.
 */

const batchSizes = [1, 9] as const;
const holdsPerRound = 900;
const insertsPerRound = 900;
const rounds = 4;
const warmUpCalls = 100;
const account = { kind: "user", id: "hold-bench" } as const;
const keyId = randomUUID();

export async function runHoldStatementBenchmarks(): Promise<Figure[]> {
  const database = await createBenchDatabase();
  const ledger = await openLedger({ databaseUrl: database.url, applicationName: "bench-holds" });
  const holdsClient = await ledger.pool.connect();
  const insertClient = await ledger.pool.connect();
  // The log writer's part: each batch's rows leave the table once placed, as logged rows do, on a connection
  // of their own (not counted), so every hold reads an account with a handful of rows, as it does in service.
  const logClient = await ledger.pool.connect();
  try {
    const store = ledger.store;
    if (!(store instanceof PostgresEventStore)) throw new Error("holds need the PostgreSQL event store");
    await store.append(toppedUp(account, "1000000000", "hold-bench"));
    await activateBenchKey(insertClient, keyId, account);
    await insertClient.query(
      "CREATE TABLE bench_one_row (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, usage json NOT NULL)",
    );
    const holds = new PostgresUsageAuthorizations(holdsClient);
    const holdsBackend = await backendPidOf(holdsClient);
    const insertBackend = await backendPidOf(insertClient);
    const insertOne = () =>
      insertClient.query({
        name: "bench-one-row",
        text: "INSERT INTO bench_one_row (usage) VALUES ($1)",
        values: ['{"input":12,"output":18}'],
      });

    const figures: Figure[] = [];
    for (const batchSize of batchSizes) {
      const placeBatch = async () => {
        const requests = Array.from({ length: batchSize }, () => benchAuthorizationRequest(keyId, account));
        const decisions = await holds.authorizeUsage(requests);
        if (decisions.some((decision) => decision.kind !== "held"))
          throw new Error("a benchmark hold was refused: the account ran dry");
        await logClient.query("DELETE FROM request_holds WHERE request_id = ANY ($1::text[])", [
          requests.map((request) => request.data.requestId),
        ]);
      };
      for (let call = 0; call < warmUpCalls; call++) await placeBatch();
      for (let call = 0; call < warmUpCalls; call++) await insertOne();
      let holdCpuMs = 0;
      let insertCpuMs = 0;
      const calls = Math.ceil(holdsPerRound / batchSize);
      for (let round = 0; round < rounds; round++) {
        holdCpuMs += await backendCpuMsDuring(holdsBackend, async () => {
          for (let call = 0; call < calls; call++) await placeBatch();
        });
        insertCpuMs += await backendCpuMsDuring(insertBackend, async () => {
          for (let insert = 0; insert < insertsPerRound; insert++) await insertOne();
        });
      }
      figures.push({
        name: `PostgreSQL CPU per hold, in batches of ${batchSize} (${rounds * calls * batchSize} holds)`,
        value: (holdCpuMs * 1_000) / (rounds * calls * batchSize),
        unit: "µs",
        baseline: (insertCpuMs * 1_000) / (rounds * insertsPerRound),
        baselineName: "one-row INSERT + commit",
      });
    }
    return figures;
  } finally {
    holdsClient.release();
    insertClient.release();
    logClient.release();
    await ledger.close();
    await database.drop();
  }
}

async function backendCpuMsDuring(pid: number, work: () => Promise<void>): Promise<number> {
  const before = cpuMsOf(pid);
  await work();
  return cpuMsOf(pid) - before;
}
