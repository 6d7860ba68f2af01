import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import { beforeAll, describe, expect, it } from "vitest";

/**
 * The README and docs/ are reference: what the system is and how to use, run, reproduce and profile it. The
 * history of the work lives in git log, so no page reads as a notebook (sessions, dated rounds, commit ids,
 * what was tried and not kept, issue numbers), and the contract's rule numbers (C7, C10, …) appear only where
 * docs/rules.md defines each in words, or inside a link to it.
 */

const repository = path.resolve(import.meta.dirname, "../..");

let pages: { name: string; text: string }[];

beforeAll(async () => {
  const names = [
    "README.md",
    ...(await readdir(path.join(repository, "docs")))
      .filter((file) => file.endsWith(".md"))
      .map((file) => `docs/${file}`),
  ];
  pages = await Promise.all(
    names.map(async (name) => ({ name, text: await readFile(path.join(repository, name), "utf8") })),
  );
});

/** Each line of a page matching `pattern`, as `page:line: text`, with fenced code left out. */
function linesMatching(pattern: RegExp, except: readonly string[] = []): string[] {
  const found: string[] = [];
  for (const { name, text } of pages) {
    if (except.includes(name)) continue;
    let fenced = false;
    text.split("\n").forEach((line, index) => {
      if (line.trimStart().startsWith("```")) fenced = !fenced;
      if (!fenced && pattern.test(line)) found.push(`${name}:${index + 1}: ${line.trim()}`);
    });
  }
  return found;
}

describe("the README and docs/", () => {
  it("read as reference, not as a record of the work", () => {
    expect(pages.length).toBeGreaterThan(5);
    // A work session, not a sign-in: "this session", "the seventh session", "last session's" …
    const workSession =
      /\b(this|last|next|previous|earlier|later|first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|same) sessions?('s)?\b(?!-| (token|cookie|secret|claim))/i;
    expect(linesMatching(workSession)).toEqual([]);
    expect(linesMatching(/^#+ .*\b20\d\d-\d\d-\d\d\b/)).toEqual([]);
    expect(linesMatching(/tried and not kept|measured, not kept|not kept:/i)).toEqual([]);
    expect(linesMatching(/\bissues? \d+\b/i)).toEqual([]);
    // A commit id: hexadecimal with both letters and digits (plain numbers are figures).
    expect(linesMatching(/\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,12}\b/)).toEqual([]);
  });

  it("state the contract's rules in words, defined in docs/rules.md", () => {
    const rules = pages.find((page) => page.name === "docs/rules.md")!;
    for (const number of ["C3", "C7", "C8", "C10", "C13"])
      expect(rules.text, number).toMatch(new RegExp(`^## .*\\(${number}\\)$`, "m"));
    const bareRuleNumber = /\bC\d{1,2}\b/;
    const elsewhere = linesMatching(bareRuleNumber, ["docs/rules.md"]).filter((line) =>
      bareRuleNumber.test(line.replace(/\]\([^)]*rules\.md[^)]*\)/g, "")),
    );
    expect(elsewhere).toEqual([]);
  });
});
