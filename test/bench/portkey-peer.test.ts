import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { assertPortkeyProxies, type RunningPortkey, startPortkey } from "../../bench/portkey-peer";
import { type Simulator, startSimulator } from "../../src/providers/simulator/simulator";

/**
 * The bench's peer, Portkey OSS as its users deploy it (production mode, headless, port by `--port=`), routes
 * a JSON and a streamed chat completion from the official OpenAI client to the simulator and back, text and
 * usage intact; with a wrong upstream the check fails instead of measuring errors.
 */

let simulator: Simulator;
let portkey: RunningPortkey;

beforeAll(async () => {
  simulator = await startSimulator({ latencyMs: 0 });
  portkey = await startPortkey();
});

afterAll(async () => {
  await portkey?.stop();
  await simulator?.close();
});

describe("Portkey as the bench's peer", () => {
  it("proxies JSON and streamed completions to the simulator with its text and usage", async () => {
    await expect(assertPortkeyProxies(portkey.url, simulator.url)).resolves.toBeUndefined();
  });

  it("fails the check when Portkey cannot reach the upstream", async () => {
    await expect(assertPortkeyProxies(portkey.url, "http://127.0.0.1:9")).rejects.toThrow();
  });
});
