import { describe, expect, it } from "vitest";
import { retryingConflicts, StreamCommands } from "../../../src/ledger/store/conflict-retry";
import { WrongExpectedVersionError } from "../../../src/ledger/store/event-store";

const fastLimits = { attemptsMax: 4, backoffBaseMs: 1, backoffMaxMs: 4 };
const conflict = () => new WrongExpectedVersionError("apikey-1", 3, 4);

describe("commands retried on a conflict", () => {
  it("decides again after each conflict until one appends", async () => {
    let attempts = 0;
    const result = await retryingConflicts(async () => {
      attempts += 1;
      if (attempts < 3) throw conflict();
      return "appended";
    }, fastLimits);

    expect(result).toBe("appended");
    expect(attempts).toBe(3);
  });

  it("gives up after its attempts with the last conflict, and never retries another error", async () => {
    let attempts = 0;
    await expect(
      retryingConflicts(async () => {
        attempts += 1;
        throw conflict();
      }, fastLimits),
    ).rejects.toBeInstanceOf(WrongExpectedVersionError);
    expect(attempts).toBe(fastLimits.attemptsMax);

    let failures = 0;
    await expect(
      retryingConflicts(async () => {
        failures += 1;
        throw new Error("not found");
      }, fastLimits),
    ).rejects.toThrow("not found");
    expect(failures).toBe(1);
  });

  it("takes turns within the process per stream: a burst on one stream never conflicts with itself", async () => {
    const commands = new StreamCommands(fastLimits);
    let version = 0;
    let conflicts = 0;
    // A stream whose append fails when another append landed between this command's read and its write.
    const command = async () => {
      const read = version;
      await new Promise((resolve) => setImmediate(resolve));
      if (version !== read) {
        conflicts += 1;
        throw conflict();
      }
      version += 1;
    };

    await Promise.all(Array.from({ length: 20 }, () => commands.decideAndAppend("apikey-1", command)));

    expect(version).toBe(20);
    expect(conflicts).toBe(0);
  });
});
