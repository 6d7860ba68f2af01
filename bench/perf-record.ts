import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { stat } from "node:fs/promises";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { setTimeout as sleep } from "node:timers/promises";
import { type PerfBreakdown, PerfScriptReader } from "./support/perf-samples";

/**
 * `BENCH_PERF_DIR`: where the `cost` section records the whole machine with Linux `perf` while each of its loads
 * runs (`<label>.data`, kept for `perf report -i`), and prints what every kind of process spent its CPU on
 * (bench/support/perf-samples.ts). The Node children then run with `--perf-basic-prof`, so that their JIT
 * frames have names (each writes `/tmp/perf-<pid>.map`). Needs `perf` and the right to sample every CPU
 * (root, or `kernel.perf_event_paranoid` at most 0).
 */
export const perfDirectory = process.env.BENCH_PERF_DIR;

/** How often each CPU is sampled: prime, so that the samples do not beat with the machine's timers. */
const samplesPerSecond = 499;
const startWaitMs = 10_000;

export interface PerfRecording {
  /** Stops recording; resolves with the data file. */
  stop(): Promise<string>;
}

/** Starts `perf record` on every CPU, with call chains; resolves once it writes its data file. */
export async function startPerfRecording(label: string): Promise<PerfRecording> {
  const directory = perfDirectory;
  if (directory === undefined) throw new Error("BENCH_PERF_DIR is not set");
  const file = join(directory, `${label.replace(/[^\w.-]+/g, "-")}.data`);
  const perf = spawn(
    "perf",
    ["record", "-a", "-g", "-e", "cpu-clock", "-F", String(samplesPerSecond), "-o", file],
    { stdio: ["ignore", "ignore", "pipe"] },
  );
  const failed = failureOf(perf);
  const deadline = Date.now() + startWaitMs;
  while (!(await hasHeader(file))) {
    if (perf.exitCode !== null || Date.now() > deadline) {
      perf.kill("SIGKILL");
      throw new Error(`perf record did not start: ${await failed}`);
    }
    await sleep(50);
  }
  return {
    stop: async () => {
      perf.kill("SIGINT");
      if (perf.exitCode === null && perf.signalCode === null) await once(perf, "exit");
      return file;
    },
  };
}

/** Reads a recording's samples into `breakdown`. */
export async function readPerfRecording(file: string, breakdown: PerfBreakdown): Promise<void> {
  const perf = spawn("perf", ["script", "-i", file, "-F", "pid,tid,time,period,ip,sym,dso"], {
    stdio: ["ignore", "pipe", "ignore"],
  });
  const reader = new PerfScriptReader((sample) => breakdown.add(sample));
  const exited = once(perf, "exit");
  for await (const line of createInterface({ input: perf.stdout! })) reader.line(line);
  reader.end();
  const [code] = (await exited) as [number | null];
  if (code !== 0) throw new Error(`perf script -i ${file} exited with ${code}`);
}

async function hasHeader(file: string): Promise<boolean> {
  try {
    return (await stat(file)).size > 0;
  } catch {
    return false;
  }
}

/** What the process said on its standard error, or why it could not start (no `perf` installed). */
function failureOf(child: ChildProcess): Promise<string> {
  const said: string[] = [];
  child.stderr?.on("data", (chunk: Buffer) => said.push(chunk.toString()));
  return new Promise((resolve) => {
    child.once("error", (error) => resolve(error.message));
    child.once("exit", () => resolve(said.join("").trim()));
  });
}
