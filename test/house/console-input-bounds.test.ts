import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { inputLengthsMax } from "../../console/src/lib/input-bounds";
import {
  billingLimits,
  keyTextLimits,
  readLimits,
  sessionLimits,
  webhookLimits,
} from "../../src/kernel/limits";

/**
 * A console field is bounded as the server bounds what it sends (src/kernel/limits.ts), through
 * console/src/lib/input-bounds.ts: a number written in a page falls behind the server's the day either
 * changes, and a field shorter than the server's bound cuts what is pasted into it (an id into another
 * account's), one longer lets the page send what the server refuses.
 */

const consoleSources = path.resolve(import.meta.dirname, "../../console/src");

async function pageSources(directory: string): Promise<string[]> {
  const names = await readdir(directory, { recursive: true });
  return names.filter((name) => name.endsWith(".tsx")).map((name) => path.join(directory, name));
}

describe("the console's text fields", () => {
  it("take their maxLength from input-bounds.ts, never a number of their own", async () => {
    const numbered: string[] = [];
    for (const file of await pageSources(consoleSources)) {
      const text = await readFile(file, "utf8");
      for (const [index, line] of text.split("\n").entries())
        if (/maxLength=\{\s*[\d_]+\s*\}/.test(line))
          numbered.push(`${path.relative(consoleSources, file)}:${index + 1}: ${line.trim()}`);
    }
    expect(numbered).toEqual([]);
  });

  it("are bounded as the server bounds each", () => {
    expect(inputLengthsMax).toEqual({
      accountId: sessionLimits.accountIdLengthMax,
      accountSearch: readLimits.searchTextLengthMax,
      keyName: keyTextLimits.nameLengthMax,
      keyDescription: keyTextLimits.descriptionLengthMax,
      topUpReference: billingLimits.referenceLengthMax,
      webhookUrl: webhookLimits.urlLengthMax,
    });
  });
});
