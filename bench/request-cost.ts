import type pg from "pg";
import { cpuMsOf, type ProcessKinds } from "./process-cpu";

/**
 * What a request costs, counted on the server rather than guessed: the events it appends, the rows it writes
 * (by table), the statements it runs (by statement, when the server has `pg_stat_statements`), the WAL it
 * writes and the WAL flushes it waits for, and the CPU each kind of process spends — read before and after a
 * load and divided by its requests. WAL and background CPU are the whole server's: run it on a quiet one.
 */

export interface CostCounters {
  events: number;
  rowsByTable: Map<string, number>;
  /** Per statement (normalised text): calls and execution ms; absent without the extension. */
  statements: Map<string, StatementCounters> | undefined;
  walBytes: bigint;
  walSyncs: number;
  transactions: number;
}

/** CPU ms so far of each process of each kind, by pid. */
export type CpuReading = Record<string, Map<number, number>>;

export interface StatementCounters {
  calls: number;
  /** Calls by a client, not from inside a function or trigger (`pg_stat_statements.track = all` counts both). */
  topLevelCalls: number;
  executionMs: number;
}

/** Kinds of process whose CPU is counted, each as the pids that are that kind right now. */
export type ProcessKindPids = ProcessKinds<string>;

export interface RequestCost {
  requests: number;
  eventsPerRequest: number;
  rowsPerRequest: number;
  rowsByTablePerRequest: [string, number][];
  statementsPerRequest: number | undefined;
  /** Statements by calls per request, most first. */
  topStatements: { text: string; callsPerRequest: number; executionUsPerRequest: number }[] | undefined;
  walBytesPerRequest: number;
  walSyncsPerRequest: number;
  transactionsPerRequest: number;
  cpuUsPerRequest: Record<string, number>;
}

export async function hasStatementStatistics(monitor: pg.Client): Promise<boolean> {
  const loaded = await monitor.query<{ loaded: boolean }>(
    "SELECT current_setting('shared_preload_libraries') ~ 'pg_stat_statements' AS loaded",
  );
  if (!loaded.rows[0]?.loaded) return false;
  await monitor.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
  return true;
}

/**
 * Read right after a load, not after waiting for the statistics: a pool closes idle connections after 10 s,
 * and a backend gone before the reading takes its CPU time with it.
 */
export async function readCpu(kinds: ProcessKindPids): Promise<CpuReading> {
  const reading: CpuReading = {};
  for (const [kind, pidsOf] of Object.entries(kinds))
    reading[kind] = new Map((await pidsOf()).map((pid) => [pid, cpuMsOf(pid)]));
  return reading;
}

export async function readCostCounters(monitor: pg.Client, withStatements: boolean): Promise<CostCounters> {
  const events = await monitor.query<{ events: string }>(
    "SELECT coalesce(max(position), 0)::text AS events FROM ledger_events",
  );
  const tables = await monitor.query<{ relname: string; written: string }>(
    // Durable rows only: a temporary table (the projection runner's parsed batches) is not WAL-logged.
    `SELECT relname, (n_tup_ins + n_tup_upd + n_tup_del)::text AS written FROM pg_stat_user_tables
     WHERE schemaname NOT LIKE 'pg\\_temp\\_%'`,
  );
  const wal = await monitor.query<{ bytes: string; syncs: string; transactions: string }>(
    `SELECT (pg_current_wal_lsn() - '0/0')::text AS bytes, wal.wal_sync::text AS syncs,
            (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database())::text AS transactions
     FROM pg_stat_wal wal`,
  );
  const walRow = wal.rows[0]!;
  return {
    events: Number(events.rows[0]!.events),
    rowsByTable: new Map(tables.rows.map((row) => [row.relname, Number(row.written)])),
    statements: withStatements ? await readStatementCounters(monitor) : undefined,
    walBytes: BigInt(walRow.bytes),
    walSyncs: Number(walRow.syncs),
    transactions: Number(walRow.transactions),
  };
}

async function readStatementCounters(monitor: pg.Client): Promise<Map<string, StatementCounters>> {
  const result = await monitor.query<{
    query: string;
    calls: string;
    top_level_calls: string;
    execution_ms: number;
  }>(
    `SELECT query, sum(calls)::text AS calls, coalesce(sum(calls) FILTER (WHERE toplevel), 0)::text AS top_level_calls,
            sum(total_exec_time) AS execution_ms
     FROM pg_stat_statements
     WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
     GROUP BY query`,
  );
  return new Map(
    result.rows.map((row) => [
      row.query,
      {
        calls: Number(row.calls),
        topLevelCalls: Number(row.top_level_calls),
        executionMs: row.execution_ms,
      },
    ]),
  );
}

/**
 * The cost per request between two readings around `requests` requests. A process's CPU counts from the
 * `before` reading, or from its start when it began during the load (a new pooled connection).
 */
export function costPerRequest(
  before: { counters: CostCounters; cpu: CpuReading },
  after: { counters: CostCounters; cpu: CpuReading },
  requests: number,
): RequestCost {
  const per = (value: number) => value / requests;
  const rowsByTable: [string, number][] = [];
  for (const [table, written] of after.counters.rowsByTable) {
    const delta = written - (before.counters.rowsByTable.get(table) ?? 0);
    if (delta > 0) rowsByTable.push([table, per(delta)]);
  }
  rowsByTable.sort((left, right) => right[1] - left[1]);
  let statementsPerRequest: number | undefined;
  let topStatements: RequestCost["topStatements"];
  if (before.counters.statements && after.counters.statements) {
    const deltas = [...after.counters.statements].map(([text, counters]) => {
      const earlier = before.counters.statements!.get(text);
      return {
        text,
        callsPerRequest: per(counters.calls - (earlier?.calls ?? 0)),
        topLevelCallsPerRequest: per(counters.topLevelCalls - (earlier?.topLevelCalls ?? 0)),
        executionUsPerRequest: per((counters.executionMs - (earlier?.executionMs ?? 0)) * 1_000),
      };
    });
    const ran = deltas.filter((delta) => delta.callsPerRequest > 0);
    // What the clients sent: the statements a function or trigger runs are part of the one that called it.
    statementsPerRequest = ran.reduce((total, delta) => total + delta.topLevelCallsPerRequest, 0);
    topStatements = ran.sort((left, right) => right.executionUsPerRequest - left.executionUsPerRequest);
  }
  const cpuUsPerRequest: Record<string, number> = {};
  for (const [kind, pids] of Object.entries(after.cpu)) {
    let cpuMs = 0;
    for (const [pid, ms] of pids) cpuMs += ms - (before.cpu[kind]?.get(pid) ?? 0);
    cpuUsPerRequest[kind] = per(cpuMs * 1_000);
  }
  return {
    requests,
    eventsPerRequest: per(after.counters.events - before.counters.events),
    rowsPerRequest: rowsByTable.reduce((total, [, rows]) => total + rows, 0),
    rowsByTablePerRequest: rowsByTable,
    statementsPerRequest,
    topStatements,
    walBytesPerRequest: per(Number(after.counters.walBytes - before.counters.walBytes)),
    walSyncsPerRequest: per(after.counters.walSyncs - before.counters.walSyncs),
    transactionsPerRequest: per(after.counters.transactions - before.counters.transactions),
    cpuUsPerRequest,
  };
}

/** The server's own processes (WAL writer, checkpointer, autovacuum…), as PostgreSQL lists them. */
export async function postgresBackgroundPids(monitor: pg.Client): Promise<number[]> {
  const result = await monitor.query<{ pid: number }>(
    "SELECT pid FROM pg_stat_activity WHERE backend_type <> 'client backend'",
  );
  return result.rows.map((row) => row.pid);
}

/** The Redis server's pid, from its own INFO (it may run anywhere on this machine). */
export async function redisServerPid(info: () => Promise<string>): Promise<number[]> {
  const match = /process_id:(\d+)/.exec(await info());
  return match ? [Number(match[1])] : [];
}
