import pg from "pg";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrate } from "../../../src/database/migrations";
import type { RequestLogEntry } from "../../../src/gateway/activity/request-log-entry";
import { RequestLogWriter } from "../../../src/gateway/activity/request-log-writer";
import { metricsRegistry } from "../../../src/kernel/metrics-registry";
import { ledgerSchema } from "../../../src/ledger/schema/ledger-schema";
import { capturedLog } from "../../support/captured-log";
import { createTestDatabase, type TestDatabase } from "../../support/database";
import { freePort } from "../../support/free-port";

/**
 * The request log's writer against real PostgreSQL: rows go in multi-row INSERTs, a full queue drops and
 * counts rather than waits, and a batch the database refuses is dropped and counted, never retried forever:
 * whole when the database is away, only the rows the table refuses when one row's data fails the INSERT.
 */

let database: TestDatabase;
let pool: pg.Pool;
const logger = pino({ level: "silent" });
const retention = { days: 90, pruneIntervalMs: 60 * 60_000, pruneRowsMax: 3 };

beforeAll(async () => {
  database = await createTestDatabase("request_log_writer");
  pool = new pg.Pool({ connectionString: database.url, max: 2 });
  await migrate(pool, ledgerSchema.objects);
});
afterAll(async () => {
  await pool?.end();
  await database?.drop();
});

function entry(index: number): RequestLogEntry {
  return {
    requestId: `req_writer_${index}`,
    startedAt: new Date(Date.UTC(2026, 10, 20, 1, 0, 0, index)),
    account: { kind: "user", id: "writer" },
    keyId: "00000000-0000-4000-8000-000000000001",
    keyPreview: "svc_abcd…wxyz",
    model: "alpha-5.4",
    endpoint: "chat.completions",
    streamed: false,
    httpStatus: 200,
    outcome: "served",
    latencyMs: 12.5,
    timeToFirstTokenMs: 3.25,
    tokens: { input: 10, cached: null, output: 20, reasoning: null },
    errorType: null,
    responseId: null,
    answeredBy: null,
  };
}

async function rowCount(): Promise<number> {
  const result = await pool.query<{ count: string }>("SELECT count(*) FROM request_log");
  return Number(result.rows[0]!.count);
}

async function storedRequestIds(requestIds: string[]): Promise<string[]> {
  const result = await pool.query<{ request_id: string }>(
    "SELECT request_id FROM request_log WHERE request_id = ANY($1) ORDER BY request_id",
    [requestIds],
  );
  return result.rows.map((row) => row.request_id);
}

async function droppedRowsMetric(): Promise<number> {
  const metrics = await metricsRegistry.getMetricsAsJSON();
  const rows = metrics.find((metric) => metric.name === "won_gateway_request_log_rows_total");
  return Number(rows?.values.find((value) => value.labels.result === "dropped")?.value ?? 0);
}

/** A row the table refuses with a data error (22003): a token count past `integer`. */
function refusedEntry(index: number): RequestLogEntry {
  return { ...entry(index), tokens: { input: 3_000_000_000, cached: null, output: 20, reasoning: null } };
}

/** The pool's INSERTs, counted. */
function countingInserts(database: Pick<pg.Pool, "query" | "connect">) {
  const counted = {
    inserts: 0,
    query: (config: pg.QueryConfig) => {
      counted.inserts += 1;
      return database.query(config);
    },
    connect: () => database.connect(),
  };
  return counted as typeof counted & Pick<pg.Pool, "query" | "connect">;
}

interface WriterLogLine {
  msg: string;
  rows?: number;
  dropped?: { requestId: string; err: { name: string; code?: string; message: string } }[];
}

describe("RequestLogWriter", () => {
  it("given rows queued faster than a flush, then they are written in batches of at most batchRowsMax", async () => {
    const writer = new RequestLogWriter({
      database: pool,
      flushIntervalMs: 60_000,
      batchRowsMax: 10,
      queueRowsMax: 100,
      retention,
      logger,
    });
    writer.start();

    for (let index = 0; index < 35; index++) writer.write(entry(index));
    await writer.close();

    expect(writer.statistics).toEqual({ rowsWritten: 35, rowsDropped: 0, batchesWritten: 4 });
    expect(await rowCount()).toBe(35);
    const row = await pool.query("SELECT * FROM request_log WHERE request_id = 'req_writer_7'");
    expect(row.rows[0]).toMatchObject({
      account_kind: "user",
      account_id: "writer",
      http_status: 200,
      outcome: "served",
      latency_ms: 12.5,
      time_to_first_token_ms: 3.25,
      input_tokens: 10,
      cached_tokens: null,
      output_tokens: 20,
    });
  });

  it("given a full queue, then further rows are dropped and counted, and the call never waits", async () => {
    // A database that never answers: the first batch stays in flight, the queue fills.
    const stalled = { query: () => new Promise<never>(() => {}), connect: () => pool.connect() };
    const writer = new RequestLogWriter({
      database: stalled,
      flushIntervalMs: 60_000,
      batchRowsMax: 5,
      queueRowsMax: 10,
      retention,
      logger,
    });

    for (let index = 0; index < 30; index++) writer.write(entry(1_000 + index));

    // 5 taken by the stalled INSERT, 10 queued, 15 dropped.
    expect(writer.statistics.rowsDropped).toBe(15);
    expect(writer.statistics.rowsWritten).toBe(0);
  });

  it("given a batch the database refuses, then it is dropped and counted, and the next batch is written", async () => {
    let failNext = true;
    const flaky = {
      query: (config: pg.QueryConfig) => {
        if (failNext) {
          failNext = false;
          return Promise.reject(Object.assign(new Error("connection refused"), { code: "ECONNREFUSED" }));
        }
        return pool.query(config);
      },
    };
    const writer = new RequestLogWriter({
      database: { ...flaky, connect: () => pool.connect() } as unknown as pg.Pool,
      flushIntervalMs: 60_000,
      batchRowsMax: 3,
      queueRowsMax: 10,
      retention,
      logger,
    });

    for (let index = 0; index < 6; index++) writer.write(entry(2_000 + index));
    await writer.close();

    expect(writer.statistics).toEqual({ rowsWritten: 3, rowsDropped: 3, batchesWritten: 1 });
  });

  it("given a batch with one row the table refuses, then every other row is written and only that one is dropped, named in the log", async () => {
    // Given: six rows, the fourth with a token count the column cannot hold
    const { logger: writerLogger, lines } = capturedLog<WriterLogLine>();
    const writer = new RequestLogWriter({
      database: pool,
      flushIntervalMs: 60_000,
      batchRowsMax: 6,
      queueRowsMax: 12,
      retention,
      logger: writerLogger,
    });
    const entries = [0, 1, 2, 3, 4, 5].map((index) =>
      index === 3 ? refusedEntry(4_003) : entry(4_000 + index),
    );
    const droppedBefore = await droppedRowsMetric();

    // When
    for (const each of entries) writer.write(each);
    await writer.close();

    // Then: the five others are stored, one row is dropped and counted
    const others = entries.filter((_, index) => index !== 3).map((each) => each.requestId);
    expect(await storedRequestIds(entries.map((each) => each.requestId))).toEqual(others);
    expect(writer.statistics.rowsWritten).toBe(5);
    expect(writer.statistics.rowsDropped).toBe(1);
    expect((await droppedRowsMetric()) - droppedBefore).toBe(1);
    // And the log names the dropped request and the error's class, but not the value the table refused
    const dropLines = lines.filter((line) => line.dropped !== undefined);
    expect(dropLines).toHaveLength(1);
    expect(dropLines[0]!.rows).toBe(1);
    expect(dropLines[0]!.dropped).toEqual([
      { requestId: "req_writer_4003", err: expect.objectContaining({ code: "22003" }) },
    ]);
    expect(JSON.stringify(lines)).not.toContain("3000000000");
  });

  it("given a batch of 500 rows with one the table refuses, then it is found in a few INSERTs, not one per row", async () => {
    const database = countingInserts(pool);
    const writer = new RequestLogWriter({
      database,
      flushIntervalMs: 60_000,
      batchRowsMax: 500,
      queueRowsMax: 500,
      retention,
      logger,
    });
    const entries = Array.from({ length: 500 }, (_, index) =>
      index === 321 ? refusedEntry(5_000 + index) : entry(5_000 + index),
    );

    for (const each of entries) writer.write(each);
    await writer.close();

    expect(writer.statistics.rowsWritten).toBe(499);
    expect(writer.statistics.rowsDropped).toBe(1);
    expect(await storedRequestIds(entries.map((each) => each.requestId))).toHaveLength(499);
    // The whole batch, then two halves per level down to the one row: 1 + 2 × ⌈log2 500⌉.
    expect(database.inserts).toBeLessThanOrEqual(1 + 2 * 9);
  });

  it("given a batch with a refused row and a database that goes away while it is split, then the rest is dropped at once", async () => {
    // Given: the whole batch reaches the table and fails on its bad row; every INSERT after it finds no server
    let inserts = 0;
    const goingAway = {
      query: (config: pg.QueryConfig) => {
        inserts += 1;
        if (inserts === 1) return pool.query(config);
        return Promise.reject(Object.assign(new Error("connect ECONNREFUSED"), { code: "ECONNREFUSED" }));
      },
      connect: () => pool.connect(),
    } as unknown as pg.Pool;
    const writer = new RequestLogWriter({
      database: goingAway,
      flushIntervalMs: 60_000,
      batchRowsMax: 8,
      queueRowsMax: 8,
      retention,
      logger,
    });

    // When
    for (let index = 0; index < 8; index++)
      writer.write(index === 6 ? refusedEntry(7_006) : entry(7_000 + index));
    await writer.close();

    // Then: the first half's INSERT failed for the outage, and nothing more was tried
    expect(inserts).toBe(2);
    expect(writer.statistics).toEqual({ rowsWritten: 0, rowsDropped: 8, batchesWritten: 0 });
  });

  it("given a database that cannot be reached, then each batch is dropped whole in one attempt, never row by row", async () => {
    // Given: a pool whose server refuses connections (nothing listens on its port)
    const unreachable = new pg.Pool({
      connectionString: `postgres://postgres@127.0.0.1:${await freePort()}/postgres`,
      max: 1,
    });
    const database = countingInserts(unreachable);
    const writer = new RequestLogWriter({
      database,
      flushIntervalMs: 60_000,
      batchRowsMax: 4,
      queueRowsMax: 8,
      retention,
      logger,
    });
    const droppedBefore = await droppedRowsMetric();

    try {
      // When: two batches
      for (let index = 0; index < 8; index++) writer.write(entry(6_000 + index));
      await writer.close();
    } finally {
      await unreachable.end();
    }

    // Then: one INSERT per batch, every row dropped and counted
    expect(database.inserts).toBe(2);
    expect(writer.statistics).toEqual({ rowsWritten: 0, rowsDropped: 8, batchesWritten: 0 });
    expect((await droppedRowsMetric()) - droppedBefore).toBe(8);
  });
});

describe("RequestLogWriter.prune", () => {
  it("given rows older than the retention, then a pass deletes at most pruneRowsMax of them and no newer row", async () => {
    // Given: five rows 100 days old and one from today
    const writer = new RequestLogWriter({
      database: pool,
      flushIntervalMs: 60_000,
      batchRowsMax: 10,
      queueRowsMax: 100,
      retention,
      logger,
    });
    const now = new Date(Date.UTC(2026, 10, 26, 3, 0, 0));
    const old = (index: number) => ({
      ...entry(3_000 + index),
      startedAt: new Date(now.getTime() - 100 * 24 * 60 * 60_000 + index),
    });
    for (let index = 0; index < 5; index++) writer.write(old(index));
    writer.write({ ...entry(3_100), startedAt: now });
    await writer.close();
    const countOf = async (requestIds: string[]) =>
      Number(
        (
          await pool.query<{ count: string }>("SELECT count(*) FROM request_log WHERE request_id = ANY($1)", [
            requestIds,
          ])
        ).rows[0]!.count,
      );

    // When / Then: three, then two, then none; today's row stays
    expect(await writer.prune(now)).toBe(3);
    expect(await writer.prune(now)).toBe(2);
    expect(await writer.prune(now)).toBe(0);
    expect(await countOf([0, 1, 2, 3, 4].map((index) => old(index).requestId))).toBe(0);
    expect(await countOf([entry(3_100).requestId])).toBe(1);
  });
});
