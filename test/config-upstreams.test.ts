import { describe, expect, it } from "vitest";
import { loadConfig } from "../src/config";

/**
 * A model family's upstream (C2): a key names a real upstream; no key, the built-in simulator. A base URL
 * given without its key is a half configuration — most often a key variable misspelt — and stops the start
 * naming both, rather than serving the family's clients simulated text charged at the real price.
 */

describe("a model family's upstream variables", () => {
  it("given DELTA_BASE_URL without DELTA_API_KEY, when the configuration loads, then it is refused naming both", () => {
    expect(() => loadConfig({ DELTA_BASE_URL: "https://api.delta.example" })).toThrow(
      /^invalid configuration: DELTA_BASE_URL is set but DELTA_API_KEY is not/,
    );
  });

  it("given neither, when the configuration loads, then the family is left to the simulator", () => {
    const config = loadConfig({});
    expect(config.upstreams.delta).toEqual({ family: "delta", apiKey: undefined, baseUrl: undefined });
  });

  it("given both, when the configuration loads, then the family's upstream is taken", () => {
    const config = loadConfig({ DELTA_BASE_URL: "https://api.delta.example", DELTA_API_KEY: "sk-delta" });
    expect(config.upstreams.delta).toEqual({
      family: "delta",
      apiKey: "sk-delta",
      baseUrl: "https://api.delta.example",
    });
  });
});
