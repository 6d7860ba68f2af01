import { mkdir, writeFile } from "node:fs/promises";
import { runAdmissionRefreshBenchmarks } from "./admission-refresh-bench";
import { runBillingBenchmarks } from "./billing-bench";
import { runConsoleBenchmarks } from "./console-bench";
import { runGatewayBenchmarks } from "./gateway-bench";
import { runHoldStatementBenchmarks } from "./hold-statement-bench";
import { runLedgerBenchmarks } from "./ledger-bench";
import { type Figure, targetMet } from "./measure";
import { runRequestCostBenchmarks } from "./request-cost-bench";
import { runScaleOutBenchmarks } from "./scale-out-bench";
import { runSettledLogBenchmarks } from "./settled-log-bench";
import { runStatementBenchmarks } from "./statement-bench";
import { runUpstreamResilienceBenchmarks } from "./upstream-resilience-bench";

/** `npm run bench`: every figure beside a baseline measured in the same run, so ratios hold on a noisy machine. */

const rebuildEventCount = Number(process.env.BENCH_REBUILD_EVENTS ?? 1_000_000);
/**
 * Comma-separated subset of `cost,holds,ledger,gateway,scale,admission,upstream,billing,console,statements`
 * (all by default).
 */
const sections = new Set(
  (
    process.env.BENCH_ONLY ?? "cost,holds,ledger,gateway,scale,admission,upstream,billing,console,statements"
  ).split(","),
);

function formatNumber(value: number): string {
  return value >= 100 ? Math.round(value).toLocaleString("en") : value.toFixed(3);
}

/** A target row says whether this run met it; a row with no target, or none that can be read, says nothing. */
function metWord(met: boolean | undefined): string {
  if (met === undefined) return "";
  return met ? "met" : "unmet";
}

async function main(): Promise<void> {
  const figures: Figure[] = [];
  if (sections.has("cost"))
    figures.push(...(await runRequestCostBenchmarks({ redisUrl: process.env.REDIS_URL })));
  if (sections.has("holds"))
    figures.push(...(await runHoldStatementBenchmarks()), ...(await runSettledLogBenchmarks()));
  if (sections.has("gateway"))
    figures.push(...(await runGatewayBenchmarks({ redisUrl: process.env.REDIS_URL })));
  if (sections.has("scale"))
    figures.push(...(await runScaleOutBenchmarks({ redisUrl: process.env.REDIS_URL })));
  if (sections.has("admission")) figures.push(...(await runAdmissionRefreshBenchmarks()));
  if (sections.has("upstream")) figures.push(...(await runUpstreamResilienceBenchmarks()));
  if (sections.has("billing"))
    figures.push(...(await runBillingBenchmarks({ redisUrl: process.env.REDIS_URL })));
  if (sections.has("console")) figures.push(...(await runConsoleBenchmarks()));
  if (sections.has("statements")) figures.push(...(await runStatementBenchmarks()));
  if (sections.has("ledger")) figures.push(...(await runLedgerBenchmarks({ rebuildEventCount })));

  const judged = figures.map((figure) => ({ ...figure, targetMet: targetMet(figure) }));
  const rows = judged.map((figure) => ({
    benchmark: figure.name,
    measured: `${formatNumber(figure.value)} ${figure.unit}`,
    baseline: `${formatNumber(figure.baseline)} (${figure.baselineName})`,
    ratio: (figure.value / figure.baseline).toFixed(2),
    target: figure.target ?? "",
    met: metWord(figure.targetMet),
  }));
  console.table(rows);
  await mkdir("bench", { recursive: true });
  await writeFile(
    "bench/results.json",
    `${JSON.stringify({ measuredAt: new Date().toISOString(), figures: judged }, null, 2)}\n`,
  );
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
