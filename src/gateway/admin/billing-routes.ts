import type { Router } from "express";
import { countBillingHistory, readBillingHistory } from "../../billing/read-models/billing-history";
import { readBillingPage, readBillingTotals } from "../../billing/read-models/billing-pages";
import { billingLimits, readLimits } from "../../kernel/limits";
import { billingRangeOf } from "../account/billing-range";
import {
  billingPageQuerySchema,
  billingTotalsQuerySchema,
  pagingParameterOf,
} from "../account/billing-read-schemas";
import { sendBillingJson, write } from "../account/billing-response";
import { apiErrors } from "../api-error";
import { endedAsHead } from "../http/head-request";
import { type AdminContext, parseWith } from "./admin-context";
import { billingQuerySchema } from "./admin-request-schemas";
import { billingCsvHeader, billingCsvRows } from "./billing-csv";

/**
 * `GET /billing?account=user:ID|organization:ID&from&to&format=json|csv`: one row per charge with its whole
 * breakdown, in the order the requests started. An export larger than the row limit is refused (400) before
 * anything is sent, so a file is never silently cut short.
 */
export function addBillingRoutes(router: Router, context: AdminContext): void {
  router.get("/billing", async (request, response) => {
    const { account, format } = parseWith(billingQuerySchema, request.query);
    const { from, to } = billingRangeOf(request.query);
    const query = { account, from, to };
    // One page when asked (`limit`, `cursor`, `order`); without them the whole range, as before. A CSV has
    // no place for a next cursor: paging it is refused, never answered with the whole range as if asked.
    const page = parseWith(billingPageQuerySchema, request.query);
    const paging = pagingParameterOf(page);
    if (paging !== undefined && format === "csv")
      throw apiErrors.validation(
        `${paging}: pages the JSON answer; format=csv is the whole range, oldest first`,
      );
    if (paging !== undefined) {
      const { data, nextCursor } = await readBillingPage(context.database, query, {
        limit: page.limit ?? readLimits.billingPageRowsDefault,
        cursor: page.cursor,
        order: page.order,
      });
      response.json({
        account,
        from: from?.toISOString() ?? null,
        to: to?.toISOString() ?? null,
        data,
        nextCursor,
      });
      return;
    }
    const limits = { pageSize: billingLimits.billingHistoryPageSize, rowsMax: context.billingHistoryRowsMax };
    await countBillingHistory(context.database, query, limits.rowsMax);
    const pages = readBillingHistory(context.database, query, limits);
    switch (format) {
      case "json":
        await sendBillingJson(
          response,
          { account, from: from?.toISOString() ?? null, to: to?.toISOString() ?? null },
          pages,
        );
        return;
      case "csv":
        response
          .status(200)
          .type("text/csv; charset=utf-8")
          .attachment(`billing-${account.kind}-${account.id.replace(/[^A-Za-z0-9_.-]/g, "_")}.csv`);
        if (endedAsHead(response)) return;
        await write(response, billingCsvHeader());
        for await (const page of pages) await write(response, billingCsvRows(page));
        response.end();
        return;
      default: {
        const unreachable: never = format;
        throw new Error(`unhandled format ${String(unreachable)}`);
      }
    }
  });

  /** `GET /billing/totals?account&from&to&groupBy=day|model|key`: exact sums per group and overall. */
  router.get("/billing/totals", async (request, response) => {
    const { account } = parseWith(billingQuerySchema, request.query);
    const { groupBy } = parseWith(billingTotalsQuerySchema, request.query);
    const { from, to } = billingRangeOf(request.query);
    const totals = await readBillingTotals(
      context.database,
      { account, from, to },
      groupBy,
      readLimits.billingTotalsGroupsMax,
    );
    response.json({
      account,
      from: from?.toISOString() ?? null,
      to: to?.toISOString() ?? null,
      groupBy,
      ...totals,
    });
  });
}
