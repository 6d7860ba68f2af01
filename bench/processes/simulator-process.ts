import { startSimulator } from "../../src/providers/simulator/simulator";

/**
 * The simulator in a process of its own, so the benchmark's baseline does not share the gateway's core.
 * `SIMULATOR_LATENCY_MS` (default 0) delays each answer, or a stream's first delta, as `npm start`'s does.
 */
const latencyMs = Number(process.env.SIMULATOR_LATENCY_MS ?? 0);
if (!Number.isInteger(latencyMs) || latencyMs < 0)
  throw new Error(`SIMULATOR_LATENCY_MS must be a whole number of milliseconds, not ${latencyMs}`);
const simulator = await startSimulator({ latencyMs });
process.stdout.write(`${simulator.url}\n`);
process.on("SIGTERM", () => {
  void simulator.close().then(() => process.exit(0));
});
