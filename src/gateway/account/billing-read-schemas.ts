import { z } from "zod";
import { billingTotalGroupings } from "../../billing/read-models/billing-pages";
import { readLimits } from "../../kernel/limits";

/**
 * Query fields of billing paging and totals, shared by GET /llm/billing and GET /admin/billing. Without
 * `limit` and `cursor` the billing routes answer the whole range as before (one streamed export).
 */
export const billingPageQuerySchema = z.object({
  limit: z.coerce
    .number({ error: `must be an integer from 1 to ${readLimits.billingPageRowsMax}` })
    .int({ error: `must be an integer from 1 to ${readLimits.billingPageRowsMax}` })
    .min(1, { error: `must be an integer from 1 to ${readLimits.billingPageRowsMax}` })
    .max(readLimits.billingPageRowsMax, {
      error: `must be an integer from 1 to ${readLimits.billingPageRowsMax}`,
    })
    .optional(),
  cursor: z.string().min(1).max(1_000).optional(),
  /** Oldest first (the export's order, the default) or newest first; a cursor goes on in its page's order. */
  order: z.enum(["oldest", "newest"], { error: "must be oldest or newest" }).optional(),
});

export const billingTotalsQuerySchema = z.object({
  groupBy: z.enum(billingTotalGroupings, { error: "must be day, model or key" }),
});

/** Whether the query asks for one page rather than the whole range. */
export function isPageQuery(query: z.infer<typeof billingPageQuerySchema>): boolean {
  return pagingParameterOf(query) !== undefined;
}

/** The first paging parameter the query gives, if any: it asks for one page rather than the whole range. */
export function pagingParameterOf(
  query: z.infer<typeof billingPageQuerySchema>,
): "limit" | "cursor" | "order" | undefined {
  if (query.limit !== undefined) return "limit";
  if (query.cursor !== undefined) return "cursor";
  if (query.order !== undefined) return "order";
  return undefined;
}
