import { describe, expect, it } from "vitest";
import {
  nodeModuleOf,
  PerfBreakdown,
  type PerfSample,
  PerfScriptReader,
  postgresCategoryOf,
} from "../../bench/support/perf-samples";

/** `perf script -F pid,tid,time,period,ip,sym,dso` as perf 6 prints it (frames abridged from a recording). */
const script = [
  "12387/12387  7508.986280:    2004008 ",
  "\t          5f5cda [unknown] (/usr/lib/postgresql/15/bin/postgres)",
  "\t          5f5eef pg_parse_json (/usr/lib/postgresql/15/bin/postgres)",
  "\t          30cc3f ExecMakeTableFunctionResult (/usr/lib/postgresql/15/bin/postgres)",
  "\t          303d1a standard_ExecutorRun (/usr/lib/postgresql/15/bin/postgres)",
  "\t          47e8fa PostgresMain (/usr/lib/postgresql/15/bin/postgres)",
  "",
  "12337/12340  7508.987001:    2004008 ",
  "\t    7fc0800b40ac RegExp:^(\\d+(\\.\\d*)?|\\.\\d+)(e[+-]?\\d+)?$ (/tmp/perf-12337.map)",
  "\t         15d5282 Builtins_RegExpPrototypeTestFast (/usr/bin/node)",
  "\t    7fc080270b51 JS:*Decimal file:///srv/gw/node_modules/decimal.js/decimal.mjs:4287:19 (/tmp/perf-12337.map)",
  "\t    7fc0802db2e8 JS:*assertHoldWithinFunds file:///srv/gw/src/billing/money-invariants.ts:1:407 (/tmp/perf-12337.map)",
  "\t          c4993d v8::internal::(anonymous namespace)::Invoke (/usr/bin/node)",
  "",
  "0/0  7508.988002:    2004008 ",
  "\tffffffff821fdcd1 pv_native_safe_halt ([kernel.kallsyms])",
  "",
];

function read(lines: readonly string[]): PerfSample[] {
  const samples: PerfSample[] = [];
  const reader = new PerfScriptReader((sample) => samples.push(sample));
  for (const line of lines) reader.line(line);
  reader.end();
  return samples;
}

function sampleOf(...frames: [symbol: string, dso: string][]): PerfSample {
  return { pid: 1, periodNs: 1_000, frames: frames.map(([symbol, dso]) => ({ symbol, dso })) };
}

const postgres = "/usr/lib/postgresql/15/bin/postgres";

describe("PerfScriptReader", () => {
  it("given perf script's output, then each sample has its process, its CPU time and its frames innermost first", () => {
    const samples = read(script);

    expect(samples.map(({ pid, periodNs, frames }) => ({ pid, periodNs, frames: frames.length }))).toEqual([
      { pid: 12387, periodNs: 2_004_008, frames: 5 },
      { pid: 12337, periodNs: 2_004_008, frames: 5 },
      { pid: 0, periodNs: 2_004_008, frames: 1 },
    ]);
    expect(samples[0]!.frames[1]).toEqual({ symbol: "pg_parse_json", dso: postgres });
    expect(samples[1]!.frames[4]).toEqual({
      symbol: "v8::internal::(anonymous namespace)::Invoke",
      dso: "/usr/bin/node",
    });
  });
});

describe("postgresCategoryOf", () => {
  it("given JSON parsed under the executor, then it counts as JSON parsed, not as the executor's", () => {
    expect(postgresCategoryOf(read(script)[0]!)).toBe("JSON text parsed");
  });

  it("given an index entry inserted inside a row's insert, then it counts as the index entry", () => {
    const sample = sampleOf(
      ["_bt_compare", postgres],
      ["_bt_doinsert", postgres],
      ["ExecInsertIndexTuples", postgres],
      ["heap_insert", postgres],
      ["standard_ExecutorRun", postgres],
    );

    expect(postgresCategoryOf(sample)).toBe("index entries inserted");
  });

  it("given a plan made for a cached statement, then it counts as planning", () => {
    const sample = sampleOf(
      ["hash_search_with_hash_value", postgres],
      ["standard_planner", postgres],
      ["BuildCachedPlan", postgres],
      ["PostgresMain", postgres],
    );

    expect(postgresCategoryOf(sample)).toBe("planning");
  });

  it("given a PL/pgSQL function's own work, then it counts as PL/pgSQL", () => {
    const sample = sampleOf(
      ["[unknown]", "/usr/lib/postgresql/15/lib/plpgsql.so"],
      ["plpgsql_exec_function", "/usr/lib/postgresql/15/lib/plpgsql.so"],
      ["PostgresMain", postgres],
    );

    expect(postgresCategoryOf(sample)).toBe("PL/pgSQL, other");
  });

  it("given no frame it knows, then other", () => {
    expect(postgresCategoryOf(sampleOf(["[unknown]", postgres]))).toBe("other");
  });
});

describe("nodeModuleOf", () => {
  it("given a package's frame inside a frame of ours, then the innermost of the two: the package", () => {
    expect(nodeModuleOf(read(script)[1]!, "/srv/gw")).toBe("package: decimal.js");
  });

  it("given a frame of ours innermost, then its module's path from the root", () => {
    const sample = sampleOf(
      ["Builtins_LoadIC", "/usr/bin/node"],
      ["JS:*finish file:///srv/gw/src/gateway/observation/request-observation.ts:1:2383", "/tmp/perf-9.map"],
      ["JS:*emit node:events:470:28", "/tmp/perf-9.map"],
    );

    expect(nodeModuleOf(sample, "/srv/gw")).toBe("src/gateway/observation/request-observation.ts");
  });

  it("given a scoped package, then the package with its scope", () => {
    const sample = sampleOf([
      "JS:~parse /srv/gw/node_modules/@eventstore/db-client/dist/x.js:3:4",
      "/tmp/perf-9.map",
    ]);

    expect(nodeModuleOf(sample, "/srv/gw")).toBe("package: @eventstore/db-client");
  });

  it("given only Node's own frames, then the innermost of Node's modules", () => {
    const sample = sampleOf(
      ["writev", "[kernel.kallsyms]"],
      ["JS:*writevGeneric node:internal/stream_base_commons:122:22", "/tmp/perf-9.map"],
      ["JS:*_writeGeneric node:net:926:42", "/tmp/perf-9.map"],
    );

    expect(nodeModuleOf(sample, "/srv/gw")).toBe("node: internal/stream_base_commons");
  });

  it("given a collection with no JavaScript frame, then garbage collection; else the native library", () => {
    const collection = sampleOf(
      ["v8::internal::Scavenger::ScavengeObject<v8::internal::FullHeapObjectSlot>", "/usr/bin/node"],
      ["v8::internal::ScavengerCollector::CollectGarbage", "/usr/bin/node"],
    );
    const kernel = sampleOf(["_raw_spin_unlock_irqrestore", "[kernel.kallsyms]"]);

    expect(nodeModuleOf(collection, "/srv/gw")).toBe("V8: garbage collection");
    expect(nodeModuleOf(kernel, "/srv/gw")).toBe("native: kernel");
  });

  it("given V8's threads beside the main one, then marking and sweeping are collection, the optimizing compiler compiling", () => {
    const marking = sampleOf(
      ["v8::internal::ConcurrentMarking::RunMajor", "/usr/bin/node"],
      ["v8::internal::ConcurrentMarking::JobTaskMajor::Run", "/usr/bin/node"],
    );
    const sweeping = sampleOf(
      ["v8::internal::Sweeper::RawSweep", "/usr/bin/node"],
      ["v8::internal::Sweeper::LocalSweeper::ParallelSweepPage", "/usr/bin/node"],
    );
    const compiling = sampleOf(
      ["v8::internal::compiler::GraphReducer::ReduceTop", "/usr/bin/node"],
      ["v8::internal::compiler::PipelineCompilationJob::ExecuteJobImpl", "/usr/bin/node"],
      ["v8::internal::OptimizingCompileDispatcher::CompileNext", "/usr/bin/node"],
    );
    const eventLoop = sampleOf(["uv__io_poll", "/usr/bin/node"], ["uv_run", "/usr/bin/node"]);

    expect(nodeModuleOf(marking, "/srv/gw")).toBe("V8: garbage collection");
    expect(nodeModuleOf(sweeping, "/srv/gw")).toBe("V8: garbage collection");
    expect(nodeModuleOf(compiling, "/srv/gw")).toBe("V8: compiling hot code");
    expect(nodeModuleOf(eventLoop, "/srv/gw")).toBe("native: node");
  });
});

describe("PerfBreakdown", () => {
  it("given samples of several processes, then CPU time sums by kind, and by detail within a kind", () => {
    const breakdown = new PerfBreakdown(
      (pid) => (pid === 12387 ? "postgres backends" : pid === 12337 ? "gateway" : "idle"),
      (kind, sample) => (kind === "postgres backends" ? postgresCategoryOf(sample) : undefined),
    );

    for (const sample of [...read(script), ...read(script)]) breakdown.add(sample);

    expect(Object.fromEntries(breakdown.byKind)).toEqual({
      "postgres backends": 4_008_016,
      gateway: 4_008_016,
      idle: 4_008_016,
    });
    expect(Object.fromEntries(breakdown.detailByKind.get("postgres backends")!)).toEqual({
      "JSON text parsed": 4_008_016,
    });
    expect(breakdown.detailByKind.has("gateway")).toBe(false);
  });
});
