import { startSimulator } from "../../src/providers/simulator/simulator";

/** The simulator in a process of its own, so the benchmark's baseline does not share the gateway's core. */
const simulator = await startSimulator({ latencyMs: 0 });
process.stdout.write(`${simulator.url}\n`);
process.on("SIGTERM", () => {
  void simulator.close().then(() => process.exit(0));
});
