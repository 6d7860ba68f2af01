import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { promisify } from "node:util";
import type pg from "pg";
import { allProjections } from "../projections";
import { inOneTransaction } from "../src/database/in-one-transaction";
import { limits } from "../src/kernel/limits";
import { recomputeInlineFunds } from "../src/ledger/inline-funds";
import { sealCheckpoints } from "../src/ledger/integrity/ledger-checkpointer";
import { LedgerSigningKey } from "../src/ledger/integrity/ledger-signing-key";
import { balanceChecksum, rebuildProjections } from "../src/ledger/ledger-maintenance";
import { ProjectionRunner } from "../src/ledger/projection/projection-runner";
import { usageChargedRows } from "../src/ledger/rebuild/parsed-events";
import type { EventStore, StreamAppend } from "../src/ledger/store/event-store";
import { type Ledger, openLedger } from "../src/ledger/store/open-ledger";
import { PostgresEventStore } from "../src/ledger/store/postgres-event-store";
import { createBenchDatabase } from "./bench-database";
import { type Figure, percentile, runConcurrently, timed } from "./measure";
import { appendSyntheticLedger } from "./support/synthetic-ledger";

const runFile = promisify(execFile);

/**
 * Ledger benchmarks (C9): events appended per second, single and batched, by 16 writers; rebuild speed on
 * a 1,000,000-event ledger. Each beside a raw SQL baseline of the same rows in the same run.
 */

const writers = 16;
const benchSigningKey = LedgerSigningKey.parse(LedgerSigningKey.generateSeed());
const singleAppendsPerWriter = 500;
const batchSize = 500;
const batchesPerWriter = 10;

function topUpAppend(streamId: string): StreamAppend {
  return {
    streamId,
    expectedVersion: "any",
    events: [
      {
        eventId: randomUUID(),
        event: {
          type: "CreditToppedUp",
          data: { account: { kind: "user", id: streamId }, amountWon: "1000", reference: "bench" },
          metadata: { actor: "admin", occurredAt: "2026-11-20T03:00:00.000Z" },
        },
      },
    ],
  };
}

/**
 * Single and batched appends by 16 writers, as events per second; stream names carry `label`. Streams
 * receive 10 events each, so most appends chain to a predecessor, as a usage's charge does.
 */
async function appendRates(
  store: EventStore,
  label: string,
): Promise<{ singlePerSecond: number; batchedPerSecond: number }> {
  const single = await timed(() =>
    runConcurrently(writers, async (writer) => {
      for (let index = 0; index < singleAppendsPerWriter; index++)
        await store.append(topUpAppend(`single-${label}-${writer}-${index % 50}`));
    }),
  );
  const batched = await timed(() =>
    runConcurrently(writers, async (writer) => {
      for (let batch = 0; batch < batchesPerWriter; batch++) {
        const appends = Array.from({ length: batchSize }, (_, index) =>
          topUpAppend(`batched-${label}-${writer}-${index}`),
        );
        const outcomes = await store.appendBatch(appends);
        if (outcomes.some((outcome) => outcome.status === "rejected"))
          throw new Error("batched append failed");
      }
    }),
  );
  return {
    singlePerSecond: (writers * singleAppendsPerWriter) / single.seconds,
    batchedPerSecond: (writers * batchesPerWriter * batchSize) / batched.seconds,
  };
}

type AppendRates = Awaited<ReturnType<typeof appendRates>>;

/** The median of each rate over several runs (the mean of the middle two for an even count). */
function medianRates(runs: readonly AppendRates[]): AppendRates {
  const median = (values: number[]) => {
    const sorted = [...values].sort((left, right) => left - right);
    const middle = sorted.length / 2;
    return Number.isInteger(middle)
      ? (sorted[middle - 1]! + sorted[middle]!) / 2
      : sorted[Math.floor(middle)]!;
  };
  return {
    singlePerSecond: median(runs.map((run) => run.singlePerSecond)),
    batchedPerSecond: median(runs.map((run) => run.batchedPerSecond)),
  };
}

/** Runs `work` on a client of the ledger's pool, released whatever happens. */
async function withClient<T>(ledger: Ledger, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  const client = await ledger.pool.connect();
  try {
    return await work(client);
  } finally {
    client.release();
  }
}

async function createBaselineTable(ledger: Ledger): Promise<void> {
  await ledger.pool.query(`CREATE TABLE bench_raw_events (LIKE ledger_events INCLUDING ALL)`);
}

async function rawInsert(ledger: Ledger, rows: number): Promise<void> {
  const append = topUpAppend("raw");
  const event = append.events[0]!.event;
  await ledger.pool.query(
    `INSERT INTO bench_raw_events (transaction_order, event_id, stream_id, stream_version, type, schema_version, data, metadata)
     SELECT pg_current_xact_id()::text::bigint, gen_random_uuid(), 'raw-' || gen_random_uuid(), 0, $1, 1, $2, $3
     FROM generate_series(1, $4)`,
    [event.type, JSON.stringify(event.data), JSON.stringify(event.metadata), rows],
  );
}

const pacedAppends = 1_000;
const pacedAppendIntervalMs = 1;

/**
 * One writer, one append at a time with a pause between: what a request at one connection waits for to
 * make its usage durable. This is the floor under the gateway's added latency; the baseline is a raw
 * one-row INSERT (also a commit) paced the same way.
 */
async function pacedAppendLatencyFigure(ledger: Ledger): Promise<Figure> {
  const latencyP50Ms = async (work: (index: number) => Promise<unknown>) => {
    const latencies: number[] = [];
    for (let index = 0; index < pacedAppends; index++) {
      await new Promise((resolve) => setTimeout(resolve, pacedAppendIntervalMs));
      const startedAt = performance.now();
      await work(index);
      latencies.push(performance.now() - startedAt);
    }
    return percentile(
      latencies.sort((left, right) => left - right),
      0.5,
    );
  };
  const append = await latencyP50Ms((index) => ledger.store.append(topUpAppend(`paced-${index}`)));
  const raw = await latencyP50Ms(() => rawInsert(ledger, 1));
  return {
    name: "append latency p50, 1 writer, paced",
    value: append,
    unit: "ms",
    baseline: raw,
    baselineName: "raw one-row INSERT p50",
  };
}

export async function runLedgerBenchmarks(options: { rebuildEventCount: number }): Promise<Figure[]> {
  const database = await createBenchDatabase();
  const ledger = await openLedger({
    databaseUrl: database.url,
    applicationName: "bench",
    connectionsMax: writers + 4,
  });
  const figures: Figure[] = [];
  try {
    await createBaselineTable(ledger);
    const rates = await interleavedAppendRates(ledger, database.url);
    figures.push(...(await singleAppendFigures(ledger, rates)));
    figures.push(await pacedAppendLatencyFigure(ledger));
    figures.push(...(await batchedAppendFigures(ledger, rates)));
    figures.push(
      ...(await rebuildFigures({
        eventCount: options.rebuildEventCount,
        appendingTenThousandMs: (10_000 / rates.chained.batchedPerSecond) * 1_000,
      })),
    );
  } finally {
    await ledger.close();
    await database.drop();
  }
  return figures;
}

/** The append rates with the hash chain, without it, and chained by the trigger alone. */
interface AppendRatesByChaining {
  chained: AppendRates;
  unchained: AppendRates;
  triggerOnly: AppendRates;
}

/**
 * With and without the hash chain, and chained by the trigger alone, in the order A T B B T A four
 * times, so that the log growing under the runs favours none; each figure is the median of its eight
 * runs (two runs of the same appends differ by up to 10% on this machine, the target's whole margin).
 * Without: the append statement as before migration 3 and the chain trigger off. The trigger alone:
 * the path of any other insert (a SQL function), no hash supplied, the trigger chains every event.
 */
async function interleavedAppendRates(ledger: Ledger, databaseUrl: string): Promise<AppendRatesByChaining> {
  const plainStore = await PostgresEventStore.open({
    pool: ledger.pool,
    listenConnectionString: databaseUrl,
    pollIntervalMs: limits.eventStorePollIntervalMs,
    chainInStatement: false,
  });
  const runs = {
    chained: [] as AppendRates[],
    trigger: [] as AppendRates[],
    unchained: [] as AppendRates[],
  };
  const order = ["chained", "trigger", "unchained", "unchained", "trigger", "chained"] as const;
  for (const [index, kind] of [...order, ...order, ...order, ...order].entries()) {
    const label = `${kind}-${index}`;
    if (kind === "unchained") {
      await ledger.pool.query("ALTER TABLE ledger_events DISABLE TRIGGER ledger_events_chain");
      runs.unchained.push(await appendRates(plainStore, label));
      await ledger.pool.query("ALTER TABLE ledger_events ENABLE TRIGGER ledger_events_chain");
    } else {
      runs[kind].push(await appendRates(kind === "chained" ? ledger.store : plainStore, label));
    }
  }
  await plainStore.close();
  return {
    chained: medianRates(runs.chained),
    unchained: medianRates(runs.unchained),
    triggerOnly: medianRates(runs.trigger),
  };
}

/** Single appends, beside raw one-row INSERTs by as many writers and beside the unchained appends. */
async function singleAppendFigures(ledger: Ledger, rates: AppendRatesByChaining): Promise<Figure[]> {
  const singleBaseline = await timed(() =>
    runConcurrently(writers, async () => {
      for (let index = 0; index < singleAppendsPerWriter; index++) await rawInsert(ledger, 1);
    }),
  );
  const besideUnchained = {
    baseline: rates.unchained.singlePerSecond,
    baselineName: "the same appends without the hash chain",
  };
  return [
    {
      name: "events appended/s, single appends, 16 writers",
      value: rates.chained.singlePerSecond,
      unit: "events/s",
      baseline: (writers * singleAppendsPerWriter) / singleBaseline.seconds,
      baselineName: "raw one-row INSERT, 16 writers",
    },
    {
      name: "events appended/s, single appends, 16 writers, hash-chained",
      value: rates.chained.singlePerSecond,
      unit: "events/s",
      ...besideUnchained,
      target: "≥ 0.9×",
    },
    {
      name: "events appended/s, single appends, 16 writers, chained by the trigger alone",
      value: rates.triggerOnly.singlePerSecond,
      unit: "events/s",
      ...besideUnchained,
    },
  ];
}

/** Batched appends, beside raw INSERT … SELECTs of as many rows and beside the unchained appends. */
async function batchedAppendFigures(ledger: Ledger, rates: AppendRatesByChaining): Promise<Figure[]> {
  const batchedBaseline = await timed(() =>
    runConcurrently(writers, async () => {
      for (let batch = 0; batch < batchesPerWriter; batch++) await rawInsert(ledger, batchSize);
    }),
  );
  const besideUnchained = {
    baseline: rates.unchained.batchedPerSecond,
    baselineName: "the same appends without the hash chain",
  };
  return [
    {
      name: "events appended/s, batches of 500, 16 writers",
      value: rates.chained.batchedPerSecond,
      unit: "events/s",
      baseline: (writers * batchesPerWriter * batchSize) / batchedBaseline.seconds,
      baselineName: "raw INSERT … SELECT of 500 rows, 16 writers",
      target: "≥ 50,000 events/s",
    },
    {
      name: "events appended/s, batches of 500, 16 writers, hash-chained",
      value: rates.chained.batchedPerSecond,
      unit: "events/s",
      ...besideUnchained,
      target: "≥ 0.9×",
    },
    {
      name: "events appended/s, batches of 500, 16 writers, chained by the trigger alone",
      value: rates.triggerOnly.batchedPerSecond,
      unit: "events/s",
      ...besideUnchained,
    },
  ];
}

/** Folds the whole ledger by the live projection runner, as a service starting on it would. */
async function catchUpProjections(ledger: Ledger, databaseUrl: string, eventCount: number): Promise<number> {
  const runner = new ProjectionRunner({
    pool: ledger.pool,
    connectionString: databaseUrl,
    store: ledger.store,
    projections: allProjections,
    batchSizeMax: 10_000,
    standbyRetryMs: 100,
  });
  return withClient(ledger, async (client) => {
    await runner.prepare(client);
    let applied = 0;
    // Readers see an event once every older transaction on the server has ended: wait for any straggler.
    for (let attempt = 0; applied < eventCount && attempt < 1_000; attempt++) {
      applied += await runner.catchUp(client);
      if (applied < eventCount) await new Promise((resolve) => setTimeout(resolve, 10));
    }
    if (applied < eventCount)
      throw new Error(`the projection runner applied ${applied} of ${eventCount} events`);
    return applied;
  });
}

/** The heap `ledger verify` gets in the benchmark: its memory is bounded, whatever the ledger's size. */
const verifyHeapMb = 200;

/**
 * Rebuild figures on a ledger of its own, exactly the synthetic one (usage recorded and charged, top-ups,
 * keys, prices), vacuumed as an old log would be: the rebuild's events/s in SQL and in memory, what bounds
 * it, and sealing, each beside the same baselines in the same run.
 */
async function rebuildFigures(options: {
  eventCount: number;
  /** The append figures' time for 10,000 events, the baseline of sealing them. */
  appendingTenThousandMs: number;
}): Promise<Figure[]> {
  const database = await createBenchDatabase();
  const ledger = await openLedger({ databaseUrl: database.url, applicationName: "bench", connectionsMax: 4 });
  try {
    const total = await appendSyntheticLedger(ledger.store, {
      eventCount: options.eventCount,
      seed: 7,
      batchSize: 1_000,
    });
    // Whichever ran first would otherwise pay for setting every row's hint bits.
    await ledger.pool.query("VACUUM (ANALYZE) ledger_events");
    const rebuilds = await timedRebuilds(ledger, database.url, total);
    const verifying = await timedVerify(database.url);
    const besideRawCopy = await rawCopyBaseline(ledger, total);
    const parts = await timedRebuildParts(ledger);
    const sealing = await timedSealing(ledger);
    return [
      ...rebuildRateFigures(total, rebuilds, verifying, besideRawCopy),
      ...rebuildPartFigures(total, parts, besideRawCopy),
      {
        name: `checkpoint cost per 10,000 events (sealed ${sealing.result.toLocaleString("en")})`,
        value: (sealing.seconds * 1_000 * 10_000) / sealing.result,
        unit: "ms",
        baseline: options.appendingTenThousandMs,
        baselineName: "appending 10,000 events, batches of 500, 16 writers",
      },
    ];
  } finally {
    await ledger.close();
    await database.drop();
  }
}

/** What `timed` answers. */
type Timed<T> = { result: T; seconds: number };
type BaselineOfFigure = Pick<Figure, "baseline" | "baselineName">;

/**
 * The live path first: the projection runner folds the ledger as a running service does, and its
 * balances are what every rebuild (in SQL, then in memory) must reproduce.
 */
async function timedRebuilds(ledger: Ledger, databaseUrl: string, total: number) {
  const catchingUp = await timed(() => catchUpProjections(ledger, databaseUrl, total));
  const before = await balanceChecksum(ledger.pool);
  const rebuildContext = { pool: ledger.pool, store: ledger.store, projections: allProjections };
  const rebuild = await timed(() =>
    rebuildProjections(rebuildContext, { batchSizeMax: 10_000, fold: "sql" }),
  );
  const rebuildInMemory = await timed(() =>
    rebuildProjections(rebuildContext, { batchSizeMax: 10_000, fold: "memory" }),
  );
  for (const { fold, checksum } of [rebuild.result, rebuildInMemory.result]) {
    if (checksum.sha256 !== before.sha256 || checksum.totalWon !== before.totalWon) {
      throw new Error(`the rebuild in ${fold} changed the balances: ${JSON.stringify({ before, checksum })}`);
    }
  }
  const sameBalances = `balances checksum as before (${before.accountCount} accounts, ₩${before.totalWon})`;
  return { catchingUp, rebuild, rebuildInMemory, sameBalances };
}

type RebuildTimings = Awaited<ReturnType<typeof timedRebuilds>>;

/**
 * The CLI's verify in a process of its own whose heap is capped far below what the ledger's projections
 * take: every hash chain, then every projection against a fold of the log, spilling as the in-memory
 * rebuild does. It fails the benchmark if it runs out of memory or finds a difference.
 */
async function timedVerify(databaseUrl: string): Promise<Timed<unknown>> {
  return timed(() =>
    runFile(
      process.execPath,
      [`--max-old-space-size=${verifyHeapMb}`, "--import", "tsx", "src/ledger-cli.ts", "verify"],
      { env: { ...process.env, DATABASE_URL: databaseUrl }, maxBuffer: 16 * 1024 * 1024 },
    ),
  );
}

/** The baseline of every rebuild figure: a raw INSERT … SELECT of the whole log, as events/s. */
async function rawCopyBaseline(ledger: Ledger, total: number): Promise<BaselineOfFigure> {
  await ledger.pool.query("CREATE TABLE bench_rebuild_copy (LIKE ledger_events)");
  const rebuildBaseline = await timed(() =>
    ledger.pool.query("INSERT INTO bench_rebuild_copy SELECT * FROM ledger_events"),
  );
  return {
    baseline: total / rebuildBaseline.seconds,
    baselineName: "raw INSERT … SELECT of the same events",
  };
}

function rebuildRateFigures(
  total: number,
  { catchingUp, rebuild, rebuildInMemory, sameBalances }: RebuildTimings,
  verifying: Timed<unknown>,
  besideRawCopy: BaselineOfFigure,
): Figure[] {
  return [
    {
      name: `rebuild, ${total.toLocaleString("en")} events, ${allProjections.length} projections folded in SQL (the default); ${sameBalances}`,
      value: rebuild.result.eventCount / rebuild.seconds,
      unit: "events/s",
      ...besideRawCopy,
      target: "≥ 0.3× the baseline",
    },
    {
      name: `rebuild, the same, folded in memory (the TypeScript folds; EventStoreDB's path); ${sameBalances}`,
      value: rebuildInMemory.result.eventCount / rebuildInMemory.seconds,
      unit: "events/s",
      ...besideRawCopy,
    },
    {
      name: "the projection runner catching the same up from the start (the live path, batches of 10,000)",
      value: catchingUp.result / catchingUp.seconds,
      unit: "events/s",
      ...besideRawCopy,
    },
    {
      name: `verify, the same (every chain, every projection against a fold of the log), in a ${verifyHeapMb} MB heap`,
      value: total / verifying.seconds,
      unit: "events/s",
      ...besideRawCopy,
    },
  ];
}

/**
 * What bounds the rebuild, each part alone beside the same baseline: parsing every event's data once
 * (what any fold of the log must do at the least); the billing history's rows alone, straight from
 * the log (the one read model with a row per charge, which no design can skip writing); reading the
 * log into events (the in-memory path's floor); the SQL folds of the inline read models.
 */
async function timedRebuildParts(ledger: Ledger) {
  const parsing = await timed(() => inRolledBackTransaction(ledger, parseEveryEvent));
  const billingRowsAlone = await timed(() => inRolledBackTransaction(ledger, writeBillingHistoryRows));
  const reading = await timed(async () => {
    let read = 0;
    for await (const page of ledger.store.readWholeLog!(10_000)) read += page.length;
    return read;
  });
  const recomputing = await timed(() =>
    withClient(ledger, (client) => inOneTransaction(client, () => recomputeInlineFunds(client))),
  );
  return { parsing, billingRowsAlone, reading, recomputing };
}

type RebuildPartTimings = Awaited<ReturnType<typeof timedRebuildParts>>;

async function parseEveryEvent(client: pg.PoolClient): Promise<number> {
  const parsed = await client.query<{ events: string }>(
    `SELECT count(parsed."requestId")::text AS events FROM ledger_events event
     CROSS JOIN LATERAL json_to_record(event.data) AS parsed("requestId" text)`,
  );
  return Number(parsed.rows[0]!.events);
}

async function writeBillingHistoryRows(client: pg.PoolClient): Promise<void> {
  await client.query(
    `CREATE TABLE bench_billing_history AS
     SELECT parsed."requestId" AS request_id, parsed.account->>'kind' AS account_kind,
            parsed.account->>'id' AS account_id, parsed."keyId" AS key_id, parsed.model, parsed.endpoint,
            parsed."startedAt" AS started_at, (event.metadata->>'occurredAt')::timestamptz AS charged_at,
            parsed."amountWon" AS amount_won, parsed.breakdown
     FROM ledger_events event CROSS JOIN LATERAL json_to_record(event.data) AS parsed(${usageChargedRows.record})
     WHERE event.type = 'UsageCharged'`,
  );
  // The key and index of projections/billing-history.ts.
  await client.query("ALTER TABLE bench_billing_history ADD PRIMARY KEY (request_id)");
  await client.query(
    "CREATE INDEX ON bench_billing_history (account_kind, account_id, started_at, request_id)",
  );
}

function rebuildPartFigures(
  total: number,
  { parsing, billingRowsAlone, reading, recomputing }: RebuildPartTimings,
  besideRawCopy: BaselineOfFigure,
): Figure[] {
  return [
    {
      name: "rebuild's floor: every event's data parsed once (json_to_record, both cores), no fold, no write",
      value: total / parsing.seconds,
      unit: "events/s",
      ...besideRawCopy,
    },
    {
      name: "rebuild's floor: the billing history's rows alone, parsed and written straight from the log, keyed and indexed",
      value: total / billingRowsAlone.seconds,
      unit: "events/s",
      ...besideRawCopy,
    },
    {
      name: "rebuild's part: reading the log into events (COPY, parsed, no fold)",
      value: reading.result / reading.seconds,
      unit: "events/s",
      ...besideRawCopy,
    },
    {
      name: "rebuild's part: recomputing the inline read models (SQL folds)",
      value: total / recomputing.seconds,
      unit: "events/s",
      ...besideRawCopy,
    },
  ];
}

/** Seals the whole ledger (in checkpoints of 10,000); answers the events sealed. */
async function timedSealing(ledger: Ledger): Promise<Timed<number>> {
  return timed(() =>
    withClient(ledger, async (client) => {
      let sealed = 0;
      for (;;) {
        const checkpoints = await sealCheckpoints(client, benchSigningKey, {
          eventsMax: limits.checkpointEventsMax,
          intervalMs: 0,
          checkpointsMax: 100,
        });
        sealed += checkpoints.reduce((sum, checkpoint) => sum + checkpoint.eventCount, 0);
        if (checkpoints.length < 100) return sealed;
      }
    }),
  );
}

/** Runs `work` in a transaction that parallel workers may serve (as a rebuild's), then rolls it back. */
async function inRolledBackTransaction<T>(
  ledger: Ledger,
  work: (client: pg.PoolClient) => Promise<T>,
): Promise<T> {
  return withClient(ledger, async (client) => {
    await client.query("BEGIN");
    try {
      await client.query("SET LOCAL parallel_setup_cost = 0");
      await client.query("SET LOCAL parallel_tuple_cost = 0");
      return await work(client);
    } finally {
      await client.query("ROLLBACK");
    }
  });
}
