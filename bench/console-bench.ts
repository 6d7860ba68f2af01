import { allProjections } from "../projections";
import { billingHistoryTable } from "../projections/billing-history";
import { usageByDayTable } from "../projections/usage-by-day";
import { readBillingPage, readBillingTotals } from "../src/billing/read-models/billing-pages";
import { readUsageByDay } from "../src/billing/read-models/usage-by-day";
import { limits } from "../src/kernel/limits";
import { seoulDateOf } from "../src/kernel/seoul-calendar";
import { ProjectionRunner } from "../src/ledger/projection/projection-runner";
import { openLedger } from "../src/ledger/store/open-ledger";
import { createBenchDatabase } from "./bench-database";
import { type Figure, percentile, timed } from "./measure";

/**
 * The console's reads over an account with 1,000,000 charges (issue 15: under 200 ms): its usage chart (90
 * days per Seoul day × model × key, from the usage-by-day projection) and the first page of its charges
 * table (billing-history projection), each the read the route runs; and the API's totals by day, which sum
 * the charges themselves (finance's read, not the console's). Beside
 * the chart, in the same run: the same sums folded from the raw charges, what the chart would cost without
 * its projection. The projections' rows are written as their folds would leave them, straight in SQL: a
 * ledger of a million charges is the rebuild benchmark's business, not this one's.
 */

const charges = 1_000_000;
const days = 90;
const models = ["alpha-5.4", "alpha-5.4-mini", "beta-3-flash", "delta-4.6-sonnet", "gamma-4-5"];
const keys = 20;
const readsPerFigure = 25;
const account = { kind: "user" as const, id: "console-bench" };
const target = "< 200 ms";

export async function runConsoleBenchmarks(): Promise<Figure[]> {
  const database = await createBenchDatabase();
  const ledger = await openLedger({ databaseUrl: database.url, applicationName: "bench-console" });
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
    const end = new Date();
    const start = new Date(end.getTime() - days * 86_400_000);
    await fillProjections(ledger.pool, start, end);
    const range = { from: seoulDateOf(start), to: seoulDateOf(end) };
    const history = { account, from: start, to: end };

    const chart = await medianMs(() => readUsageByDay(ledger.pool, account, range));
    const fromCharges = await medianMs(() =>
      ledger.pool.query(
        `SELECT (started_at AT TIME ZONE 'Asia/Seoul')::date AS day, model, key_id, count(*), sum(amount_won)
           FROM ${billingHistoryTable.name}
          WHERE account_kind = $1 AND account_id = $2 AND started_at >= $3 AND started_at < $4
          GROUP BY 1, 2, 3 ORDER BY 1, 2, 3`,
        [account.kind, account.id, start.toISOString(), end.toISOString()],
      ),
    );
    const firstPage = await medianMs(() =>
      readBillingPage(ledger.pool, history, { limit: 100, cursor: undefined }),
    );
    const totals = await medianMs(() => readBillingTotals(ledger.pool, history, "day", 1_000));
    const label = `${charges.toLocaleString("en")} charges`;
    return [
      {
        name: `console usage chart, ${days} days, ${label}`,
        value: chart,
        unit: "ms",
        baseline: fromCharges,
        baselineName: "the same sums from the raw charges",
        target,
      },
      {
        name: `console charges table, first page of 100, ${label}`,
        value: firstPage,
        unit: "ms",
        baseline: chart,
        baselineName: "the usage chart",
        target,
      },
      {
        name: `console totals by day, ${days} days, ${label}`,
        value: totals,
        unit: "ms",
        baseline: fromCharges,
        baselineName: "the usage chart's sums from the raw charges",
        target,
      },
    ];
  } finally {
    await ledger.close();
    await database.drop();
  }
}

/** One account's charges spread evenly over the days, models and keys, and their per-day fold. */
async function fillProjections(pool: Awaited<ReturnType<typeof openLedger>>["pool"], start: Date, end: Date) {
  const { seconds } = await timed(async () => {
    await pool.query(
      `INSERT INTO ${billingHistoryTable.name}
         (request_id, account_kind, account_id, key_id, model, endpoint, started_at, charged_at, amount_won, breakdown)
       SELECT 'req_bench_' || n, $1, $2, 'key-' || (n % $3), ($4::text[])[1 + n % cardinality($4::text[])],
              'chat.completions', at, at + interval '50 milliseconds', 2.07,
              json_build_object('tokens', json_build_object('input', 1200, 'cached', 200, 'output', 350),
                                'fxRateKrwPerUsd', '1400', 'amountWon', '2.07')
       FROM generate_series(1, $5::int) AS n,
            LATERAL (SELECT $6::timestamptz + (n::double precision / $5) * ($7::timestamptz - $6::timestamptz) AS at) t`,
      [account.kind, account.id, keys, models, charges, start.toISOString(), end.toISOString()],
    );
    await pool.query(
      `INSERT INTO ${usageByDayTable.name}
         (day, account_kind, account_id, model, key_id, requests, amount_won,
          input_tokens, cached_tokens, output_tokens, reasoning_tokens)
       SELECT (started_at AT TIME ZONE 'Asia/Seoul')::date, account_kind, account_id, model, key_id, count(*),
              sum(amount_won), 1200 * count(*), 200 * count(*), 350 * count(*), 0
       FROM ${billingHistoryTable.name} GROUP BY 1, 2, 3, 4, 5`,
    );
    await pool.query(`ANALYZE ${billingHistoryTable.name}, ${usageByDayTable.name}`);
  });
  console.error(`console bench: ${charges.toLocaleString("en")} charges written in ${seconds.toFixed(1)} s`);
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
