import { allProjections } from "../projections";
import { billingHistoryTable } from "../projections/billing-history";
import { readMonthCharges } from "../src/billing/statements/finance-export";
import { readMonthlyStatement } from "../src/billing/statements/monthly-statement";
import { boundsOf } from "../src/billing/statements/statement-month";
import { limits } from "../src/kernel/limits";
import { rebuildProjections } from "../src/ledger/ledger-maintenance";
import { ProjectionRunner } from "../src/ledger/projection/projection-runner";
import { type Ledger, openLedger } from "../src/ledger/store/open-ledger";
import { createBenchDatabase } from "./bench-database";
import { type Figure, percentile, timed } from "./measure";

/**
 * Issue 29: a monthly statement for an account with 100,000 charges in the month, against a plain SQL sum
 * of the same charges (target: within 2×), and the month's finance export streamed with its heap growth
 * (bounded: pages, never the month). The charges are real `UsageCharged` events in the log, folded into
 * every projection by the SQL rebuild, so the statement reads what the live service would.
 */

const chargesInMonth = 100_000;
const earlierMonths = 11;
const chargesPerEarlierMonth = 1_000;
const month = "2026-10";
const account = { kind: "user" as const, id: "statement-bench" };
const models = ["alpha-5.4", "alpha-5.4-mini", "beta-3-flash", "delta-4.6-sonnet", "gamma-4-5"];
const keys = 20;
const readsPerFigure = 15;

export async function runStatementBenchmarks(): Promise<Figure[]> {
  const database = await createBenchDatabase();
  const ledger = await openLedger({ databaseUrl: database.url, applicationName: "bench-statements" });
  try {
    const runner = new ProjectionRunner({
      pool: ledger.pool,
      connectionString: database.url,
      store: ledger.store,
      projections: allProjections,
      batchSizeMax: limits.projectionBatchSizeMax,
      standbyRetryMs: 500,
    });
    const client = await ledger.pool.connect();
    try {
      await runner.prepare(client);
    } finally {
      client.release();
    }
    await appendCharges(ledger.pool);
    const { seconds } = await timed(() =>
      rebuildProjections(
        { pool: ledger.pool, store: ledger.store, projections: allProjections },
        { fold: "sql", batchSizeMax: limits.rebuildBatchSizeMax },
      ),
    );
    await ledger.pool.query("ANALYZE");
    console.error(`statement bench: projections folded in SQL in ${seconds.toFixed(1)} s`);
    return [await statementFigure(ledger.pool), await financeExportFigure(ledger.pool)];
  } finally {
    await ledger.close();
    await database.drop();
  }
}

type Pool = Ledger["pool"];

const monthLabel = `${chargesInMonth.toLocaleString("en")} charges in the month`;

/** The account's charges in the month, as both baselines select them. */
const accountMonthCondition =
  "account_kind = $1 AND account_id = $2 AND started_at >= $3 AND started_at < $4";

function accountMonthParameters(): string[] {
  const { start, end } = boundsOf(month);
  return [account.kind, account.id, start.toISOString(), end.toISOString()];
}

/** The statement's median read time beside a plain SQL sum of the same charges; checks it counts them all. */
async function statementFigure(pool: Pool): Promise<Figure> {
  const now = new Date();
  const statementMs = await medianMs(() => readMonthlyStatement(pool, account, month, now));
  const plainSumMs = await medianMs(() =>
    pool.query(
      `SELECT sum(amount_won) FROM ${billingHistoryTable.name} WHERE ${accountMonthCondition}`,
      accountMonthParameters(),
    ),
  );
  const statement = await readMonthlyStatement(pool, account, month, now);
  if (statement.chargeCount !== chargesInMonth)
    throw new Error(`the statement counts ${statement.chargeCount} charges, not ${chargesInMonth}`);
  return {
    name: `monthly statement, ${monthLabel}`,
    value: statementMs,
    unit: "ms",
    baseline: plainSumMs,
    baselineName: "a plain SQL sum of the same charges",
    target: "≤ 2× baseline",
  };
}

/** The month's finance export streamed, with its heap growth, beside one SELECT of every row into memory. */
async function financeExportFigure(pool: Pool): Promise<Figure> {
  global.gc?.();
  const heapBefore = process.memoryUsage().heapUsed;
  let heapPeak = heapBefore;
  let exported = 0;
  const exportRun = await timed(async () => {
    for await (const page of readMonthCharges(pool, month, undefined)) {
      exported += page.length;
      heapPeak = Math.max(heapPeak, process.memoryUsage().heapUsed);
    }
  });
  const selectAll = await timed(() =>
    pool.query(
      `SELECT * FROM ${billingHistoryTable.name} WHERE ${accountMonthCondition}`,
      accountMonthParameters(),
    ),
  );
  if (exported !== chargesInMonth) throw new Error(`the export holds ${exported} charges`);
  return {
    name: `finance export streamed, ${monthLabel} (heap growth ${((heapPeak - heapBefore) / 1_048_576).toFixed(1)} MB)`,
    value: exportRun.seconds * 1_000,
    unit: "ms",
    baseline: selectAll.seconds * 1_000,
    baselineName: "one SELECT of every row into memory",
  };
}

/**
 * The charges as the reconciler appends them (UsageCharged v3, alone on their request's stream), by one SQL
 * statement per month so that 111,000 events take seconds; the chain trigger hashes each row as it would.
 */
async function appendCharges(pool: Pool): Promise<void> {
  const months = [
    { month, count: chargesInMonth },
    ...Array.from({ length: earlierMonths }, (_, index) => ({
      month: `2025-${String(index + 1).padStart(2, "0")}`,
      count: chargesPerEarlierMonth,
    })),
  ];
  await pool.query(
    `INSERT INTO ledger_events (transaction_order, event_id, stream_id, stream_version, type, schema_version, data, metadata)
     VALUES (pg_current_xact_id()::text::bigint, gen_random_uuid(), 'account-user-statement-bench', 0, 'CreditToppedUp', 1,
             json_build_object('account', json_build_object('kind', 'user', 'id', $1::text), 'amountWon', '1000000',
                               'reference', 'bench'),
             json_build_object('actor', 'admin', 'occurredAt', '2025-01-01T00:00:00.000Z'))`,
    [account.id],
  );
  for (const { month: chargedMonth, count } of months) {
    const { start, end } = boundsOf(chargedMonth);
    await pool.query(
      `INSERT INTO ledger_events (transaction_order, event_id, stream_id, stream_version, type, schema_version, data, metadata)
       SELECT pg_current_xact_id()::text::bigint, gen_random_uuid(), 'usage-' || request_id, 0, 'UsageCharged', 3,
              json_build_object('requestId', request_id, 'keyId', key_id,
                'account', json_build_object('kind', 'user', 'id', $1::text), 'model', model,
                'endpoint', 'chat.completions', 'startedAt', started_at, 'amountWon', '2.070000',
                'breakdown', json_build_object(
                  'tokens', json_build_object('input', 1200, 'cached', 200, 'output', 350, 'reasoning', 0),
                  'inputUsdPerMillionTokens', '1.25', 'cachedInputUsdPerMillionTokens', '0.125',
                  'outputUsdPerMillionTokens', '10', 'usd', '0.004775', 'fxRateKrwPerUsd', '1400',
                  'fxRateDate', '2026-10-01', 'discountRate', '0', 'amountWon', '2.070000', 'usageSource', 'upstream'),
                'releasedPendingWon', null, 'correction', null),
              json_build_object('actor', 'system:reconciler', 'occurredAt', started_at)
       FROM (SELECT 'bench-' || $2::text || '-' || n AS request_id,
                    '00000000-0000-4000-8000-' || lpad((n % $3)::text, 12, '0') AS key_id,
                    ($4::text[])[1 + n % cardinality($4::text[])] AS model,
                    to_char(($5::timestamptz + (n::double precision / ($6 + 1)) * ($7::timestamptz - $5::timestamptz))
                            AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS started_at
             FROM generate_series(1, $6::int) AS n) charge`,
      [account.id, chargedMonth, keys, models, start.toISOString(), count, end.toISOString()],
    );
  }
}

async function medianMs(read: () => Promise<unknown>): Promise<number> {
  await read();
  const samples: number[] = [];
  for (let run = 0; run < readsPerFigure; run++) samples.push((await timed(read)).seconds * 1_000);
  return percentile(
    samples.sort((left, right) => left - right),
    0.5,
  );
}
