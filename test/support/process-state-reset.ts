import { metricsRegistry } from "../../src/kernel/metrics-registry";
import { installModels } from "../../src/providers/catalog";

/**
 * Test files share worker processes (vitest.config.ts). What the service keeps per process — the catalog a
 * models file extends, the metrics registry — is set back to a new process's before each file, so that no
 * file reads another's models or counts.
 */
installModels([]);
metricsRegistry.resetMetrics();
