import pg from "pg";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { migrate } from "../../../src/database/migrations";
import type { RequestLogEntry } from "../../../src/gateway/activity/request-log-entry";
import { RequestLogWriter } from "../../../src/gateway/activity/request-log-writer";
import { ledgerSchema } from "../../../src/ledger/schema/ledger-schema";
import { createTestDatabase, type TestDatabase } from "../../support/database";

/**
 * The request log's writer against real PostgreSQL: rows go in multi-row INSERTs, a full queue drops and
 * counts rather than waits, and a batch the database refuses is dropped and counted, never retried forever.
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
