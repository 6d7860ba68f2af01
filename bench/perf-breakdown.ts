import { readPerfRecording } from "./perf-record";
import type { CpuReading } from "./request-cost";
import { nodeModuleOf, PerfBreakdown, postgresCategoryOf } from "./support/perf-samples";

/**
 * A load's `perf` recording as CPU per request: by kind of process (the kinds the `cost` section counts from
 * /proc, so the two can be read side by side), PostgreSQL's backends by the kind of work, and each Node
 * process of ours by module. µs per request is the samples' CPU time over the load's requests.
 */

/** The kinds whose samples are read by module: the Node processes the `cost` section runs. */
const nodeKinds = new Set(["gateway", "worker", "proxy"]);
const modulesShown = 12;

export async function printPerfBreakdown(
  label: string,
  file: string,
  pidsByKind: CpuReading,
  requests: number,
  /** Processes outside the counted kinds that the breakdown names (the upstream's simulator). */
  named: Record<string, number> = {},
): Promise<void> {
  const kindOfPid = new Map<number, string>();
  for (const [kind, pid] of Object.entries(named)) kindOfPid.set(pid, kind);
  for (const [kind, pids] of Object.entries(pidsByKind))
    for (const pid of pids.keys()) kindOfPid.set(pid, kind);
  const root = process.cwd();
  const breakdown = new PerfBreakdown(
    (pid) => kindOfPid.get(pid) ?? (pid === 0 ? "idle" : pid === process.pid ? "load generator" : "other"),
    (kind, sample) => {
      if (kind.startsWith("postgres backends")) return postgresCategoryOf(sample);
      if (nodeKinds.has(kind)) return nodeModuleOf(sample, root);
      return undefined;
    },
  );
  await readPerfRecording(file, breakdown);
  const perRequest = (ns: number) => {
    const us = ns / 1_000 / requests;
    return us >= 100 ? Math.round(us).toLocaleString("en") : us.toFixed(1);
  };
  const table = (entries: Iterable<[string, number]>) =>
    Object.fromEntries(
      [...entries].sort(([, a], [, b]) => b - a).map(([name, ns]) => [name, perRequest(ns)] as const),
    );

  console.log(`\nperf, ${label}: CPU µs per request, by kind of process (${file})`);
  console.table(table(breakdown.byKind));
  const postgres = new Map<string, number>();
  for (const [kind, categories] of breakdown.detailByKind)
    if (kind.startsWith("postgres backends"))
      for (const [category, ns] of categories) postgres.set(category, (postgres.get(category) ?? 0) + ns);
  if (postgres.size > 0) {
    console.log("PostgreSQL backends, by work (µs per request):");
    console.table(table(postgres));
  }
  for (const kind of nodeKinds) {
    const modules = breakdown.detailByKind.get(kind);
    if (!modules) continue;
    console.log(`${kind}, by module (µs per request, the ${modulesShown} largest):`);
    console.table(Object.fromEntries(Object.entries(table(modules)).slice(0, modulesShown)));
  }
}
