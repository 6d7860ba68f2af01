import { modelFamilies } from "../src/config";
import { UpstreamRegistry } from "../src/gateway/generation/upstream-registry";
import { findModel } from "../src/providers/catalog";
import { createAdapter } from "../src/providers/create-adapter";
import type { GenerationRequest, ModelFamily } from "../src/providers/provider";
import { type Figure, percentile } from "./measure";
import { startChild } from "./processes/child-process";

/**
 * What upstream resilience (C13) adds to a request with a healthy upstream: the p50 of one call at c=1
 * through the resilient call (endpoint pick, breaker, deadline timer, attempt record, retries enabled)
 * beside the adapter called alone, in the same process against the same zero-latency simulator, taken in
 * interleaved rounds so that drift on a shared machine falls on both alike.
 */

const rounds = 10;
const requestsPerRound = 200;
const model = findModel("gamma-4-5")!;
const request: GenerationRequest = {
  upstreamModelId: model.upstreamModelId,
  messages: [
    { role: "user", content: [{ type: "text", text: "Summarise event sourcing in two sentences." }] },
  ],
  maxOutputTokens: 64,
};

export async function runUpstreamResilienceBenchmarks(): Promise<Figure[]> {
  const simulator = await startChild(
    "bench/processes/simulator-process.ts",
    [],
    { ...process.env, SIMULATOR_LATENCY_MS: "0" },
    /^http:\/\//,
  );
  const simulatorUrl = simulator.line.trim();
  const adapter = createAdapter({ protocol: "chat-completions", baseUrl: simulatorUrl, apiKey: "bench" });
  const registry = new UpstreamRegistry(
    Object.fromEntries(
      modelFamilies.map((family) => [family, { baseUrl: simulatorUrl, apiKey: "bench" }]),
    ) as Record<ModelFamily, { baseUrl: string; apiKey: string }>,
    {},
  );
  const signal = new AbortController().signal;
  const ways = {
    "adapter alone": {
      json: () => adapter.generate(request, signal),
      stream: () => adapter.stream(request, signal),
    },
    resilient: {
      json: () => registry.call(model, () => request).generate(signal),
      stream: () => registry.call(model, () => request).stream(signal),
    },
  };
  type Way = keyof typeof ways;
  const samples: Record<"json" | "stream", Record<Way, number[]>> = {
    json: { "adapter alone": [], resilient: [] },
    stream: { "adapter alone": [], resilient: [] },
  };
  try {
    for (let round = 0; round < rounds; round++) {
      for (const way of Object.keys(ways) as Way[]) {
        for (let index = 0; index < requestsPerRound; index++) {
          const jsonStartedMs = performance.now();
          await ways[way].json();
          samples.json[way].push(performance.now() - jsonStartedMs);
          const streamStartedMs = performance.now();
          for await (const _parts of ways[way].stream()) {
            // Drained whole: the stream's last part is its usage.
          }
          samples.stream[way].push(performance.now() - streamStartedMs);
        }
      }
    }
  } finally {
    await registry.close();
    await adapter.close();
    await simulator.stop();
  }
  const p50 = (values: number[]) =>
    percentile(
      [...values].sort((left, right) => left - right),
      0.5,
    );
  return (["json", "stream"] as const).map((mode) => ({
    name: `upstream call p50, ${mode === "json" ? "JSON" : "streaming"}, 1 connection, retries enabled, healthy upstream`,
    value: p50(samples[mode].resilient),
    unit: "ms",
    baseline: p50(samples[mode]["adapter alone"]),
    baselineName: "the adapter alone, same run",
    target: "within noise (ratio ≈ 1)",
  }));
}
