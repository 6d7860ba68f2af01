import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { perfDirectory } from "../perf-record";

/**
 * Starts `tsx <script>` and resolves with the first line it prints (its URL), or rejects on exit. With
 * `BENCH_CPU_PROFILE_DIR` set, each child writes a V8 CPU profile there when it exits (open it in Chrome's
 * DevTools or speedscope): how the benchmark finds where a process's time goes. With `BENCH_PERF_DIR` set,
 * each child writes a map of its JIT code's names for `perf` (../perf-record.ts).
 */
const cpuProfileDirectory = process.env.BENCH_CPU_PROFILE_DIR;
const profileArguments = [
  ...(cpuProfileDirectory ? ["--cpu-prof", `--cpu-prof-dir=${cpuProfileDirectory}`] : []),
  ...(perfDirectory ? ["--perf-basic-prof"] : []),
];

export async function startChild(
  script: string,
  args: readonly string[],
  environment: NodeJS.ProcessEnv,
  readyLine: RegExp,
): Promise<{ child: ChildProcess; line: string; stop(): Promise<void> }> {
  const child = spawn(process.execPath, [...profileArguments, "--import", "tsx", script, ...args], {
    env: environment,
    stdio: ["ignore", "pipe", "pipe"],
  });
  const output: string[] = [];
  const line = await new Promise<string>((resolve, reject) => {
    const lines = createInterface({ input: child.stdout! });
    const errors = createInterface({ input: child.stderr! });
    const remember = (text: string) => {
      output.push(text);
      if (output.length > 50) output.shift();
    };
    lines.on("line", (text) => {
      remember(text);
      if (readyLine.test(text)) resolve(text);
    });
    errors.on("line", remember);
    child.once("exit", (code) => reject(new Error(`${script} exited with ${code}:\n${output.join("\n")}`)));
    setTimeout(() => reject(new Error(`${script} did not start:\n${output.join("\n")}`)), 60_000).unref();
  });
  return {
    child,
    line,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill("SIGTERM");
        setTimeout(() => child.kill("SIGKILL"), 10_000).unref();
      }),
  };
}
