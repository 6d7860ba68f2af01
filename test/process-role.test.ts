import { describe, expect, it } from "vitest";
import { ConfigError } from "../src/kernel/config-error";
import { roleOf } from "../src/process-role";

/**
 * The command line names the role, as `--role=<role>` or not at all (every role). Anything else is a mistake
 * an operator must hear of at start: read as no role, it ran every role where one was meant.
 */

describe("the role a process runs", () => {
  it("given no argument, then it runs every role; given --role=<role>, then that one", () => {
    expect(roleOf([])).toBe("all");
    expect(roleOf(["--role=all"])).toBe("all");
    expect(roleOf(["--role=gateway"])).toBe("gateway");
    expect(roleOf(["--role=worker"])).toBe("worker");
  });

  it.each([
    [
      ["--role", "worker"],
      "invalid configuration: unknown argument --role (name a role as --role=gateway or --role=worker)",
    ],
    [
      ["worker"],
      "invalid configuration: unknown argument worker (name a role as --role=gateway or --role=worker)",
    ],
    [
      ["--rol=worker"],
      "invalid configuration: unknown argument --rol=worker (name a role as --role=gateway or --role=worker)",
    ],
    [
      ["--role=gateway", "--role=worker"],
      "invalid configuration: --role given twice (one process runs one role)",
    ],
  ])(
    "given the arguments %j, when a process starts, then it stops with one line naming them",
    (argv, line) => {
      const refused = (() => {
        try {
          roleOf(argv);
        } catch (error) {
          return error;
        }
      })();
      expect(refused).toBeInstanceOf(ConfigError);
      expect((refused as Error).message).toBe(line);
    },
  );
});
