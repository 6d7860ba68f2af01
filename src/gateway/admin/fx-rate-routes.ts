import type { Router } from "express";
import {
  decodeFxRateCursor,
  encodeFxRateCursor,
  type FxRatePosition,
  InvalidFxRateCursorError,
  readFxRateHistory,
} from "../../billing/fx/fx-rate-history";
import { setFxRate } from "../../billing/fx/set-fx-rate";
import { formatMoney } from "../../kernel/money";
import { ApiError, apiErrors, applicationCodes } from "../api-error";
import { type AdminContext, adminOriginOf, parseWith, writeDependenciesOf } from "./admin-context";
import { fxRateBodySchema, fxRateHistoryQuerySchema } from "./admin-request-schemas";

/**
 * `POST /fx-rates` (manual rate, source "admin"), `POST /fx-rates/refresh` (ask the bank now for today's
 * rate) and `GET /fx-rates` (history, newest first, a page at a time, and whether the bank is configured as a
 * source).
 */
export function addFxRateRoutes(router: Router, context: AdminContext): void {
  router.post("/fx-rates", async (request, response) => {
    const body = parseWith(fxRateBodySchema, request.body);
    const rateDate = body.rateDate ?? body.appliesOn;
    const { recordedAt } = await setFxRate(
      writeDependenciesOf(context),
      { appliesOn: body.appliesOn, rateDate, rateKrwPerUsd: body.rate },
      adminOriginOf(response.locals),
    );
    response.status(201).json({
      appliesOn: body.appliesOn,
      rateDate,
      rate: formatMoney(body.rate),
      source: "admin",
      recordedAt,
    });
  });

  router.post("/fx-rates/refresh", async (_request, response) => {
    const outcome = await context.fxRateRefresher.refresh(adminOriginOf(response.locals));
    switch (outcome.kind) {
      case "recorded":
        response.status(201).json({
          appliesOn: outcome.quote.appliesOn,
          rateDate: outcome.quote.rateDate,
          rate: outcome.quote.rateKrwPerUsd,
          source: outcome.quote.source,
        });
        return;
      case "already-recorded":
        response.status(200).json({ appliesOn: outcome.appliesOn, alreadyRecorded: true });
        return;
      case "not-configured":
        throw new ApiError(
          503,
          applicationCodes.modelProcessing,
          "The FX source is not configured (KOREAEXIM_AUTHKEY is unset): set rates with POST /admin/fx-rates",
        );
      default: {
        const unreachable: never = outcome;
        throw new Error(`unhandled refresh outcome ${JSON.stringify(unreachable)}`);
      }
    }
  });

  router.get("/fx-rates", async (request, response) => {
    const query = parseWith(fxRateHistoryQuerySchema, request.query);
    const history = await readFxRateHistory(context.database, {
      limit: query.limit,
      after: fxRatePositionOf(query.cursor),
    }).catch((error: unknown) => {
      throw error instanceof InvalidFxRateCursorError ? apiErrors.validation(error.message) : error;
    });
    response.json({
      // Whether POST /fx-rates/refresh can ask the bank (KOREAEXIM_AUTHKEY set): consoles offer it only then.
      bankSourceConfigured: context.fxRateRefresher.configured,
      data: history.entries.map((entry) => ({
        appliesOn: entry.appliesOn,
        rateDate: entry.rateDate,
        rate: entry.rateKrwPerUsd,
        source: entry.source,
        recordedAt: entry.recordedAt,
      })),
      nextCursor: history.next === null ? null : encodeFxRateCursor(history.next),
    });
  });
}

function fxRatePositionOf(cursor: string | undefined): FxRatePosition | undefined {
  if (cursor === undefined) return undefined;
  const position = decodeFxRateCursor(cursor);
  if (position === undefined)
    throw apiErrors.validation("cursor: must be a nextCursor returned by a previous page");
  return position;
}
