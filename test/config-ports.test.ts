import { describe, expect, it } from "vitest";
import { loadConfig } from "../src/config";
import { refuseUnsupportedTopology } from "../src/process-role";

/**
 * PORT and METRICS_PORT: empty is unset, as for every variable; a bad value stops the start, naming it, and
 * so does one port for both where a process would listen on both.
 */

describe("PORT and METRICS_PORT", () => {
  it("takes the default port for an empty PORT, not port 0 (any free one), and no metrics listener for an empty METRICS_PORT", () => {
    expect(loadConfig({}).port).toBe(8080);
    expect(loadConfig({ PORT: "" }).port).toBe(8080);
    expect(loadConfig({ PORT: "  " }).port).toBe(8080);
    expect(loadConfig({ PORT: "0" }).port).toBe(0);
    expect(loadConfig({ PORT: "9000" }).port).toBe(9000);
    expect(loadConfig({ METRICS_PORT: "" }).metricsPort).toBeUndefined();
    expect(loadConfig({ METRICS_PORT: "9464" }).metricsPort).toBe(9464);
  });

  it("takes the default for any other empty variable, a number's too", () => {
    const defaults = loadConfig({});
    const blanks = loadConfig({ MAX_BODY_BYTES: "", SHUTDOWN_DRAIN_MS: " ", LOG_LEVEL: "" });
    expect(blanks.settlementTimings.shutdownDrainMs).toBe(defaults.settlementTimings.shutdownDrainMs);
    expect(blanks).toEqual(defaults);
  });

  it.each(["all", "gateway"] as const)(
    "refuses METRICS_PORT equal to PORT for --role=%s, which listens on both",
    (role) => {
      const config = loadConfig({
        PORT: "9000",
        METRICS_PORT: "9000",
        DATABASE_URL: "postgres://db/gateway",
      });
      expect(() => refuseUnsupportedTopology(config, role)).toThrow(
        "invalid configuration: METRICS_PORT 9000 is also PORT; a gateway serves metrics on a port of their own",
      );
    },
  );

  it("lets a worker, which listens on METRICS_PORT alone, take the port PORT names", () => {
    const config = loadConfig({ PORT: "9000", METRICS_PORT: "9000", DATABASE_URL: "postgres://db/gateway" });
    expect(() => refuseUnsupportedTopology(config, "worker")).not.toThrow();
  });

  it.each(["http", "-1", "65536", "80.5"])("refuses PORT=%s", (value) => {
    expect(() => loadConfig({ PORT: value })).toThrow(/^invalid configuration: PORT /);
  });
});
