import { describe, expect, it } from "vitest";
import { ConfigError } from "../src/kernel/config-error";
import { configErrorOfListenFailure } from "../src/listen-failure";

const setting = { host: "10.0.0.5", port: 80, portVariable: "PORT" } as const;

function failure(code: string): Error {
  return Object.assign(new Error(`listen ${code}`), { code });
}

describe("a failure to listen", () => {
  it.each([
    ["EADDRINUSE", "invalid configuration: PORT 80 is in use on 10.0.0.5; set PORT to a free port"],
    [
      "EACCES",
      "invalid configuration: PORT 80 needs privileges this process lacks; set PORT to 1024 or above",
    ],
    [
      "ENOTFOUND",
      "invalid configuration: HOST 10.0.0.5 does not resolve to an address; set HOST to an address of this machine (127.0.0.1, or 0.0.0.0 for all)",
    ],
    [
      "EAI_AGAIN",
      "invalid configuration: HOST 10.0.0.5 does not resolve to an address; set HOST to an address of this machine (127.0.0.1, or 0.0.0.0 for all)",
    ],
    [
      "EADDRNOTAVAIL",
      "invalid configuration: HOST 10.0.0.5 is not an address of this machine; set HOST to one (127.0.0.1, or 0.0.0.0 for all)",
    ],
  ])("given %s, then it is the configuration's error naming the variable", (code, line) => {
    const error = configErrorOfListenFailure(failure(code), setting);
    expect(error).toBeInstanceOf(ConfigError);
    expect(error?.message).toBe(line);
  });

  it("given the metrics port in use, then the line names METRICS_PORT", () => {
    const error = configErrorOfListenFailure(failure("EADDRINUSE"), {
      ...setting,
      portVariable: "METRICS_PORT",
    });
    expect(error?.message).toBe(
      "invalid configuration: METRICS_PORT 80 is in use on 10.0.0.5; set METRICS_PORT to a free port",
    );
  });

  it("given a failure the configuration did not cause, then it is not taken for one", () => {
    expect(configErrorOfListenFailure(failure("EMFILE"), setting)).toBeUndefined();
    expect(configErrorOfListenFailure(new Error("no code"), setting)).toBeUndefined();
  });
});
