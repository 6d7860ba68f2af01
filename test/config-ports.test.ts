import { describe, expect, it } from "vitest";
import { loadConfig } from "../src/config";

/** PORT and METRICS_PORT: empty is unset, as for every variable; a bad value stops the start, naming it. */

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

  it.each(["http", "-1", "65536", "80.5"])("refuses PORT=%s", (value) => {
    expect(() => loadConfig({ PORT: value })).toThrow(/^invalid configuration: PORT /);
  });
});
