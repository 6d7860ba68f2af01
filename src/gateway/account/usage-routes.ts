import { Router } from "express";
import type pg from "pg";
import { z } from "zod";
import { usageByDayTable } from "../../../projections/usage-by-day";
import { isIsoDate } from "../../billing/seoul-calendar";
import type { AccountReference } from "../../ledger/events";
import { apiErrors, validationErrorOf } from "../api-error";
import { sessionOf } from "../middleware/authenticate-session";

/**
 * `GET /llm/usage?from&to&isOrganization` (session): the caller's charged usage per Seoul day × model × key,
 * read from the usage-by-day projection — never a scan of the charges. `from` and `to` are Seoul dates, both
 * inclusive. Tenancy is the session's: personal usage of `sub`, or organization usage of `org`.
 */

export const usageDaysMax = 400;
/** Days × models × keys: a year of a busy account is far below; a bound so no answer is unbounded. */
export const usageRowsMax = 50_000;

const seoulDate = z.string().refine(isIsoDate, 'must be a date "YYYY-MM-DD" (a Seoul day)');
const usageQuery = z.object({
  from: seoulDate.optional(),
  to: seoulDate.optional(),
  isOrganization: z.enum(["true", "false"], { error: "must be true or false" }).optional(),
});

export interface UsageDayRow {
  day: string;
  model: string;
  keyId: string;
  requests: number;
  amountWon: string;
  inputTokens: number;
  cachedTokens: number;
  outputTokens: number;
  reasoningTokens: number;
}

export interface UsageResponse {
  account: AccountReference;
  from: string | null;
  to: string | null;
  data: UsageDayRow[];
}

export function createUsageRouter(database: Pick<pg.Pool, "query">): Router {
  const router = Router();
  router.get("/", async (request, response, next) => {
    try {
      const parsed = usageQuery.safeParse(request.query);
      if (!parsed.success) throw validationErrorOf(parsed.error);
      const { from, to, isOrganization } = parsed.data;
      if (from !== undefined && to !== undefined && from > to) {
        throw apiErrors.validation("from: must not be after to");
      }
      const session = sessionOf(response.locals);
      let account: AccountReference = { kind: "user", id: session.userId };
      if (isOrganization === "true") {
        if (session.organizationId === null) {
          throw apiErrors.validation("isOrganization: the session belongs to no organization");
        }
        account = { kind: "organization", id: session.organizationId };
      }
      const result = await database.query<{
        day: string;
        model: string;
        key_id: string;
        requests: string;
        amount_won: string;
        input_tokens: string;
        cached_tokens: string;
        output_tokens: string;
        reasoning_tokens: string;
      }>(
        `SELECT day::text AS day, model, key_id, requests::text AS requests, amount_won,
                input_tokens::text AS input_tokens, cached_tokens::text AS cached_tokens,
                output_tokens::text AS output_tokens, reasoning_tokens::text AS reasoning_tokens
           FROM ${usageByDayTable.name}
          WHERE account_kind = $1 AND account_id = $2
            AND ($3::date IS NULL OR day >= $3::date) AND ($4::date IS NULL OR day <= $4::date)
          ORDER BY day, model, key_id
          LIMIT ${usageRowsMax + 1}`,
        [account.kind, account.id, from ?? null, to ?? null],
      );
      if (result.rows.length > usageRowsMax) {
        throw apiErrors.validation(
          `the range holds more than ${usageRowsMax} rows: narrow it with from and to`,
        );
      }
      const body: UsageResponse = {
        account,
        from: from ?? null,
        to: to ?? null,
        data: result.rows.map((row) => ({
          day: row.day,
          model: row.model,
          keyId: row.key_id,
          requests: Number(row.requests),
          amountWon: row.amount_won,
          inputTokens: Number(row.input_tokens),
          cachedTokens: Number(row.cached_tokens),
          outputTokens: Number(row.output_tokens),
          reasoningTokens: Number(row.reasoning_tokens),
        })),
      };
      response.json(body);
    } catch (error) {
      next(error);
    }
  });
  return router;
}
