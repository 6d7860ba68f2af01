import { describe, expect, it } from "vitest";
import { allProjections } from "../../projections";
import { batchStatementsOf } from "../../src/ledger/projection/projection";

/**
 * A live batch writes each projection's tables in the order the projection defines them, the order a
 * rebuild's swap locks them in (shadow-tables.ts) and readers of one snapshot lock them in: a batch that
 * wrote one table and then waited for another the swap holds, while the swap waited for the first, would
 * deadlock, and PostgreSQL would abort one of them — maybe a rebuild of an hour.
 */
describe("the tables a projection's live SQL fold writes", () => {
  it.each(
    allProjections
      .filter((projection) => projection.sqlFold)
      .map((projection) => [projection.name, projection]),
  )("%s: are first written in the order its tables are defined", (_name, projection) => {
    const written: string[] = [];
    for (const statement of batchStatementsOf(projection.sqlFold!)) {
      const target = /^\s*(?:INSERT INTO|UPDATE|DELETE FROM)\s+(\w+)/.exec(statement)?.[1];
      expect(target, statement).toBeDefined();
      if (!written.includes(target!)) written.push(target!);
    }
    const defined = projection.tables.map((table) => table.name);
    expect(written).toEqual(defined.filter((name) => written.includes(name)));
  });
});
