import { afterAll, beforeAll, beforeEach } from "vitest";
import {
  type CreateAdapterOptions,
  createAdapter,
  type UpstreamAdapter,
} from "../../../src/providers/create-adapter";
import type { UpstreamProtocol } from "../../../src/providers/provider";
import { type Simulator, startSimulator } from "../../../src/providers/simulator/simulator";

export const testApiKey = "test-upstream-key-5b7c";

/**
 * One simulator per test file, its fault cleared and its recording emptied before each test, and the
 * adapters a test creates closed after the file.
 */
export function useSimulator(): {
  simulator: () => Simulator;
  adapter: (protocol: UpstreamProtocol, options?: Partial<CreateAdapterOptions>) => UpstreamAdapter;
} {
  let simulator: Simulator | undefined;
  const adapters: UpstreamAdapter[] = [];
  beforeAll(async () => {
    simulator = await startSimulator();
  });
  afterAll(async () => {
    await Promise.all(adapters.map((adapter) => adapter.close()));
    await simulator?.close();
  });
  beforeEach(() => {
    simulator?.setFault(undefined);
    simulator?.clearRecordedRequests();
  });
  const current = () => {
    if (!simulator) throw new Error("simulator not started");
    return simulator;
  };
  return {
    simulator: current,
    adapter: (protocol, options = {}) => {
      const adapter = createAdapter({ protocol, baseUrl: current().url, apiKey: testApiKey, ...options });
      adapters.push(adapter);
      return adapter;
    },
  };
}
