import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { KeyedTurns } from "../../src/kernel/keyed-turns";

describe("keyed turns", () => {
  it("runs the work of one key one at a time, in the order asked, whatever each one's outcome", async () => {
    const turns = new KeyedTurns();
    const log: string[] = [];
    const work = (name: string, fails: boolean) => async () => {
      log.push(`${name} start`);
      await sleep(5);
      log.push(`${name} end`);
      if (fails) throw new Error(name);
      return name;
    };

    const outcomes = await Promise.allSettled([
      turns.run("a", work("first", false)),
      turns.run("a", work("second", true)),
      turns.run("a", work("third", false)),
    ]);

    expect(log).toEqual([
      "first start",
      "first end",
      "second start",
      "second end",
      "third start",
      "third end",
    ]);
    expect(outcomes.map((outcome) => outcome.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(turns.pendingKeys).toBe(0);
  });

  it("runs the work of different keys side by side", async () => {
    const turns = new KeyedTurns();
    let running = 0;
    let mostAtOnce = 0;
    const work = async () => {
      running += 1;
      mostAtOnce = Math.max(mostAtOnce, running);
      await sleep(10);
      running -= 1;
    };

    await Promise.all(["a", "b", "c"].map((key) => turns.run(key, work)));

    expect(mostAtOnce).toBe(3);
  });
});
