import { type ChildProcess, spawn } from "node:child_process";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";

/**
 * Portkey OSS, the peer gateway, run as its users deploy it: the npm package's `build/start-server.js` under
 * plain Node (no tsx), `NODE_ENV=production`, `--headless` (no log console), the port by `--port=`. Portkey
 * cannot listen on port 0, so a free port is found first. Once Portkey answers, prints one line:
 * `<its URL> <its pid>`, so the benchmark counts Portkey's own CPU and not this launcher's, which stays idle.
 * With `BENCH_CPU_PROFILE_DIR` set, Portkey writes a V8 CPU profile there too, as the other children do.
 */
const readyWithinMs = 30_000;
const pollEveryMs = 50;
const serverScript = createRequire(import.meta.url).resolve("@portkey-ai/gateway/build/start-server.js");
const profileDirectory = process.env.BENCH_CPU_PROFILE_DIR;
const profileArguments = profileDirectory ? ["--cpu-prof", `--cpu-prof-dir=${profileDirectory}`] : [];

/** A port nothing listens on now: the system's pick for a listener closed at once. */
async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as { port: number };
  await new Promise((resolve) => probe.close(resolve));
  return port;
}

/** Waits until Portkey's root answers 200 ("AI Gateway says hey!"), or fails once it exits or times out. */
async function untilAnswering(url: string, portkey: ChildProcess): Promise<void> {
  const deadline = Date.now() + readyWithinMs;
  for (;;) {
    if (portkey.exitCode !== null)
      throw new Error(`Portkey exited with ${portkey.exitCode} before answering`);
    const answered = await fetch(url).then(
      (response) => response.ok,
      () => false,
    );
    if (answered) return;
    if (Date.now() > deadline) throw new Error(`Portkey did not answer at ${url} within ${readyWithinMs} ms`);
    await sleep(pollEveryMs);
  }
}

const port = await freePort();
const portkey = spawn(
  process.execPath,
  [...profileArguments, serverScript, "--headless", `--port=${port}`],
  // Its banner and any error go to stderr: stdout carries only the ready line.
  { env: { ...process.env, NODE_ENV: "production" }, stdio: ["ignore", process.stderr, process.stderr] },
);
// Killed by the SIGTERM below (no exit code): a clean stop.
portkey.once("exit", (code) => process.exit(code ?? 0));
const url = `http://127.0.0.1:${port}`;
await untilAnswering(url, portkey);
process.stdout.write(`${url} ${portkey.pid}\n`);
process.on("SIGTERM", () => {
  portkey.kill("SIGTERM");
});
