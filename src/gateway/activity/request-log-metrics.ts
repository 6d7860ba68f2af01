import { Counter } from "prom-client";
import { metricsRegistry } from "../../kernel/metrics-registry";

/**
 * What became of the request log's rows: written in a batch, or dropped (queue full, the batch failed, or the
 * table refused the row's data).
 */
const requestLogRows = new Counter({
  name: "won_gateway_request_log_rows_total",
  help: "Activity-log rows of generation requests, by result: written, or dropped (queue full, batch failed or row refused)",
  labelNames: ["result"] as const,
  registers: [metricsRegistry],
});

const requestLogBatches = new Counter({
  name: "won_gateway_request_log_batches_total",
  help: "INSERT statements the request log wrote (one per batch of rows, more when a refused row splits one)",
  registers: [metricsRegistry],
});

export const requestLogMetrics = {
  written(rows: number): void {
    requestLogRows.inc({ result: "written" }, rows);
    requestLogBatches.inc();
  },
  dropped(rows: number): void {
    requestLogRows.inc({ result: "dropped" }, rows);
  },
};
