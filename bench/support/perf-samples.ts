/**
 * `perf script` output (`-F pid,tid,time,period,ip,sym,dso`, call chains recorded with `-g`) read into CPU time
 * by kind of process and, within a kind, by what it was doing: for PostgreSQL backends the kind of work (JSON
 * parsed, plans made, index entries inserted, …), for Node processes the module of the innermost frame of ours
 * or of a package (Node names its JIT frames with `--perf-basic-prof`). `perf` samples only time on a CPU, so
 * unlike V8's profile it does not count a process descheduled inside a system call as busy there.
 *
 * A sample's header is `PID/TID TIME: PERIOD` (the period is the CPU time it stands for, in nanoseconds with
 * the `cpu-clock` event), followed by its frames, innermost first, one per line: `ADDRESS SYMBOL (DSO)`.
 */

export interface PerfFrame {
  symbol: string;
  dso: string;
}

export interface PerfSample {
  pid: number;
  periodNs: number;
  /** Innermost first. */
  frames: PerfFrame[];
}

const headerPattern = /^\s*(\d+)\/\d+\s+[\d.]+:\s+(\d+)\s*$/;
const framePattern = /^\s*[0-9a-f]+ (.*) \((.*)\)$/;

/** Feeds `perf script` lines one at a time; each complete sample goes to `onSample`. */
export class PerfScriptReader {
  private sample: PerfSample | undefined;

  constructor(private readonly onSample: (sample: PerfSample) => void) {}

  line(text: string): void {
    const header = headerPattern.exec(text);
    if (header) {
      this.end();
      this.sample = { pid: Number(header[1]), periodNs: Number(header[2]), frames: [] };
      return;
    }
    const frame = framePattern.exec(text);
    if (frame && this.sample) this.sample.frames.push({ symbol: frame[1]!, dso: frame[2]! });
  }

  /** The last sample, once the output has ended. */
  end(): void {
    if (this.sample) this.onSample(this.sample);
    this.sample = undefined;
  }
}

/**
 * What a PostgreSQL backend's sample was doing: the first category whose pattern names a frame of its chain,
 * in this order (JSON work inside a trigger counts as JSON, an index entry inserted by a statement as an index
 * insert); the executor's other work, PL/pgSQL and the protocol after them.
 */
const postgresCategories: readonly [string, RegExp][] = [
  ["statement statistics (pg_stat_statements)", /^pgss_store$/],
  [
    "planning",
    /^(BuildCachedPlan|RevalidateCachedQuery|pg_plan_queries|pg_plan_query|standard_planner|pg_analyze_and_rewrite\w*|parse_analyze\w*|raw_parser|pg_parse_query)$/,
  ],
  ["JSON text parsed", /^(pg_parse_json|pg_parse_json_or_ereport|json_lex\w*)$/],
  [
    "JSON built or read as jsonb",
    /^(jsonb?_build_object\w*|to_jsonb?|datum_to_jsonb?\w*|composite_to_json|escape_json|jsonb_concat|JsonbValueToJsonb|pushJsonbValue|json_agg\w*|jsonb_agg\w*|row_to_json|jsonb_out|JsonbToCString\w*|jsonb_object_field\w*|jsonb_to_record\w*)$/,
  ],
  ["hashing (sha256)", /^(sha256_bytea|pg_cryptohash_\w+|EVP_\w+|SHA256\w*)$/],
  ["index entries inserted", /^(index_insert|btinsert|_bt_doinsert)$/],
  ["rows inserted, updated, deleted", /^(heap_insert|heap_multi_insert|heap_update|heap_delete)$/],
  ["WAL records inserted", /^(XLogInsert|XLogInsertRecord|XLogRecordAssemble)$/],
  [
    "commit and WAL flush",
    /^(CommitTransaction|RecordTransactionCommit|XLogFlush|XLogWrite|issue_xlog_fsync)$/,
  ],
  [
    "executor, other",
    /^(standard_ExecutorStart|standard_ExecutorRun|standard_ExecutorFinish|standard_ExecutorEnd|ExecutorStart|ExecutorRun|ExecutorEnd|ExecScan|ExecMakeTableFunctionResult)$/,
  ],
  ["protocol and network", /^(pq_\w+|secure_\w+|socket_\w+|ReadCommand|SocketBackend)$/],
];

export function postgresCategoryOf(sample: PerfSample): string {
  for (const [category, pattern] of postgresCategories)
    if (sample.frames.some((frame) => pattern.test(frame.symbol))) return category;
  if (sample.frames.some((frame) => frame.dso.endsWith("plpgsql.so"))) return "PL/pgSQL, other";
  return "other";
}

/** A JIT frame's source (`JS:*name file:///…/src/x.ts:1:2`, `JS:~name node:internal/…:3:4`), if any. */
function sourceOf(frame: PerfFrame): string | undefined {
  if (!frame.symbol.startsWith("JS:")) return undefined;
  const source = /\s(?:file:\/\/)?(\/\S+|node:\S+?):\d+:\d+$/.exec(frame.symbol);
  return source?.[1];
}

/** V8's own work, by frames of its threads: its collector's, and its optimizing compiler's. */
const v8Collection =
  /Scavenge|MarkCompact|MinorMarkSweep|Heap::CollectGarbage|ConcurrentMarking|IncrementalMarking|Sweeper::/;
const v8Compilation =
  /OptimizingCompileDispatcher|OptimizedCompilationJob|PipelineCompilationJob|v8::internal::compiler::/;

/**
 * Where a Node process's sample was: the module of the innermost frame of ours (a path under `root`) or of a
 * package (`package: name`); else Node's own innermost module; else V8's own work on the process's threads —
 * collecting garbage (on the main thread or beside it: concurrent marking, sweeping) or compiling hot code
 * (the optimizing compiler's jobs, which run off the main thread until the code is warm) — or native work
 * (V8's runtime, libuv, the kernel) named by its innermost frame's library.
 */
export function nodeModuleOf(sample: PerfSample, root: string): string {
  let nodeModule: string | undefined;
  for (const frame of sample.frames) {
    const source = sourceOf(frame);
    if (source === undefined) continue;
    if (source.startsWith(`${root}/`)) {
      const path = source.slice(root.length + 1);
      const packagePath = /(?:^|\/)node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
      return packagePath ? `package: ${packagePath[1]}` : path;
    }
    if (source.startsWith("node:")) nodeModule ??= `node: ${source.slice("node:".length)}`;
  }
  if (nodeModule) return nodeModule;
  if (sample.frames.some((frame) => v8Collection.test(frame.symbol))) return "V8: garbage collection";
  if (sample.frames.some((frame) => v8Compilation.test(frame.symbol))) return "V8: compiling hot code";
  const leaf = sample.frames[0];
  if (!leaf) return "native: unknown";
  if (leaf.dso.includes("kernel")) return "native: kernel";
  return `native: ${leaf.dso.slice(leaf.dso.lastIndexOf("/") + 1)}`;
}

/** CPU nanoseconds by kind of process, and within each kind by what `detailOf` says the sample was doing. */
export class PerfBreakdown {
  readonly byKind = new Map<string, number>();
  readonly detailByKind = new Map<string, Map<string, number>>();

  constructor(
    private readonly kindOf: (pid: number) => string,
    private readonly detailOf: (kind: string, sample: PerfSample) => string | undefined,
  ) {}

  add(sample: PerfSample): void {
    const kind = this.kindOf(sample.pid);
    this.byKind.set(kind, (this.byKind.get(kind) ?? 0) + sample.periodNs);
    const detail = this.detailOf(kind, sample);
    if (detail === undefined) return;
    const details = this.detailByKind.get(kind) ?? new Map<string, number>();
    details.set(detail, (details.get(detail) ?? 0) + sample.periodNs);
    this.detailByKind.set(kind, details);
  }
}
