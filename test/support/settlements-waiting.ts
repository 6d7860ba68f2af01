import { metricsRegistry } from "../../src/kernel/metrics-registry";

/**
 * `won_gateway_settlements_waiting` as `/metrics` says it: the usages and voids the gateways of this test
 * process have yet to write (the gauge is the process's, so it sums every harness in it).
 */
export async function settlementsWaiting(): Promise<number> {
  const gauge = await metricsRegistry.getSingleMetric("won_gateway_settlements_waiting")?.get();
  if (gauge === undefined) throw new Error("no won_gateway_settlements_waiting");
  return gauge.values[0]!.value;
}
