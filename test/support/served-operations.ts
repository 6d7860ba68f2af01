import type express from "express";
import pino from "pino";
import { createOperations, type Operations } from "../../src/operations/operations";
import type { ServiceParts } from "../../src/service";

/**
 * The operations routes (/openapi.json, /docs, health, metrics) served beside a gateway harness's API, on
 * the queue backend of its own database: pass `router` as the harness's `operationsRouter`, and `close()`
 * after the harness.
 */
export interface ServedOperations {
  router(parts: ServiceParts): express.Router;
  close(): Promise<void>;
}

export function servedOperations(): ServedOperations {
  let operations: Operations | undefined;
  return {
    router: (parts) => {
      operations = createOperations({
        queueBackend: { kind: "postgresql", databaseUrl: parts.ledger.pool.options.connectionString! },
        logger: pino({ level: "silent" }),
      });
      return operations.router(parts);
    },
    close: async () => {
      await operations?.close();
    },
  };
}
