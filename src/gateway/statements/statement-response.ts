import type { Response } from "express";
import type pg from "pg";
import { z } from "zod";
import { readMonthCharges } from "../../billing/statements/finance-export";
import type { MonthlyStatement } from "../../billing/statements/monthly-statement";
import { isStatementMonth } from "../../billing/statements/statement-month";
import { write } from "../account/billing-response";
import { endedAsHead } from "../http/head-request";
import { statementCsvChargeLines, statementCsvHead } from "./statement-csv";

/** Query fields every statement route shares: the month, the format, and whether to list every charge. */
export const statementQuerySchema = z.object({
  month: z
    .string({ error: 'must be a month "YYYY-MM"' })
    .refine(isStatementMonth, 'must be a month "YYYY-MM"'),
  format: z.enum(["json", "csv"], { error: "must be json or csv" }).default("json"),
  lines: z.enum(["charges"], { error: "must be charges" }).optional(),
});
export type StatementQuery = z.infer<typeof statementQuerySchema>;

/**
 * Sends a statement as JSON or CSV. With `lines=charges` every charge of the month follows, streamed page
 * by page from the billing history (a month may hold 100,000 charges; none is held in memory whole). The
 * lines are read after the statement: in a provisional month they may already hold a charge posted since.
 */
export async function sendStatement(
  response: Response,
  database: Pick<pg.Pool, "query">,
  statement: MonthlyStatement,
  query: StatementQuery,
): Promise<void> {
  const charges =
    query.lines === "charges" ? readMonthCharges(database, statement.month, statement.account) : undefined;
  switch (query.format) {
    case "json": {
      if (charges === undefined) {
        response.json(statement);
        return;
      }
      response.status(200).type("application/json");
      if (endedAsHead(response)) return;
      const opening = JSON.stringify({ ...statement, charges: [] });
      await write(response, `${opening.slice(0, -"[]}".length)}[`);
      let first = true;
      for await (const page of charges) {
        const rows = page.map((entry) => JSON.stringify(entry)).join(",");
        await write(response, first ? rows : `,${rows}`);
        first = false;
      }
      response.end("]}");
      return;
    }
    case "csv": {
      response.status(200).type("text/csv; charset=utf-8").attachment(statementFileName(statement));
      if (endedAsHead(response)) return;
      await write(response, statementCsvHead(statement));
      if (charges) for await (const page of charges) await write(response, statementCsvChargeLines(page));
      response.end();
      return;
    }
    default: {
      const unreachable: never = query.format;
      throw new Error(`unhandled format ${String(unreachable)}`);
    }
  }
}

function statementFileName(statement: MonthlyStatement): string {
  const id = statement.account.id.replace(/[^A-Za-z0-9_.-]/g, "_");
  return `statement-${statement.account.kind}-${id}-${statement.month}.csv`;
}
