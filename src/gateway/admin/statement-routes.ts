import type { Router } from "express";
import { z } from "zod";
import { readMonthCharges } from "../../billing/statements/finance-export";
import { readMonthlyStatement } from "../../billing/statements/monthly-statement";
import { isStatementMonth } from "../../billing/statements/statement-month";
import { isMonthProvisional } from "../../billing/statements/unsettled-usage";
import { write } from "../account/billing-response";
import { endedAsHead } from "../http/head-request";
import { sendStatement, statementQuerySchema } from "../statements/statement-response";
import { type AdminContext, parseWith } from "./admin-context";
import { accountPathSchema } from "./admin-request-schemas";
import { billingCsvHeader, billingCsvRows } from "./billing-csv";

/**
 * `GET /statements/:kind/:id?month=YYYY-MM[&format=csv][&lines=charges]`: any account's monthly statement.
 * `GET /exports/charges?month=YYYY-MM`: the month's charges of every account as one CSV with the billing
 * history's columns, streamed; it sums exactly to the month's statements' `chargesWon`. A month that may
 * still change says so where a file saved from it shows it: its name ends `-provisional` (and the
 * `x-export-provisional` header says `true`), so a partial month is not filed as the closed one.
 */

export const chargesExportQuerySchema = z.object({
  month: z
    .string({ error: 'must be a month "YYYY-MM"' })
    .refine(isStatementMonth, 'must be a month "YYYY-MM"'),
});

export function addStatementRoutes(router: Router, context: AdminContext): void {
  router.get("/statements/:kind/:id", async (request, response) => {
    const account = parseWith(accountPathSchema, request.params);
    const query = parseWith(statementQuerySchema, request.query);
    const statement = await readMonthlyStatement(context.database, account, query.month, context.clock());
    await sendStatement(response, context.database, statement, query);
  });

  router.get("/exports/charges", async (request, response) => {
    const { month } = parseWith(chargesExportQuerySchema, request.query);
    const provisional = await isMonthProvisional(context.database, month, context.clock(), undefined);
    response
      .status(200)
      .type("text/csv; charset=utf-8")
      .attachment(provisional ? `charges-${month}-provisional.csv` : `charges-${month}.csv`)
      .setHeader("x-export-provisional", String(provisional));
    if (endedAsHead(response)) return;
    await write(response, billingCsvHeader());
    for await (const page of readMonthCharges(context.database, month, undefined))
      await write(response, billingCsvRows(page));
    response.end();
  });
}
