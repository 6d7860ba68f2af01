import type { Router } from "express";
import { removeDiscount, setDiscount } from "../../billing/commands/set-discount";
import { setModelPrice } from "../../billing/commands/set-model-price";
import {
  type ChangePosition,
  decodeChangeCursor,
  encodeChangeCursor,
  type HistoryPage,
  readDiscountHistory,
  readPricedModels,
  readPriceHistory,
} from "../../billing/read-models/pricing-history";
import { billingLimits } from "../../kernel/limits";
import { formatMoney } from "../../kernel/money";
import { findModel, listModels } from "../../providers/catalog";
import { apiErrors } from "../api-error";
import { type AdminContext, adminOriginOf, parseWith, writeDependenciesOf } from "./admin-context";
import {
  discountBodySchema,
  discountHistoryQuerySchema,
  discountScopeQuerySchema,
  modelPathSchema,
  modelPriceBodySchema,
  priceHistoryQuerySchema,
} from "./admin-request-schemas";

/**
 * `PUT /models/:slug/price` and `PUT /discounts`: in force from the moment they answer 200, as is the end of
 * a scope's rule by `DELETE /discounts?model=&organizationId=` (a parameter left out: any).
 * `GET /prices/history` and `GET /discounts/history`: every change, who made it and when, newest first, a
 * page at a time.
 */
export function addPricingRoutes(router: Router, context: AdminContext): void {
  router.put("/models/:slug/price", async (request, response) => {
    const { slug } = parseWith(modelPathSchema, request.params);
    if (findModel(slug) === undefined) throw apiErrors.notFound(`Unknown model: ${slug}`);
    const body = parseWith(modelPriceBodySchema, request.body);
    const cachedInput = body.cachedInputUsdPer1M ?? body.inputUsdPer1M;
    const { effectiveAt } = await setModelPrice(
      writeDependenciesOf(context),
      {
        model: slug,
        inputUsdPerMillionTokens: body.inputUsdPer1M,
        outputUsdPerMillionTokens: body.outputUsdPer1M,
        cachedInputUsdPerMillionTokens: cachedInput,
      },
      adminOriginOf(response.locals),
    );
    response.json({
      model: slug,
      inputUsdPer1M: formatMoney(body.inputUsdPer1M),
      outputUsdPer1M: formatMoney(body.outputUsdPer1M),
      cachedInputUsdPer1M: formatMoney(cachedInput),
      effectiveAt,
    });
  });

  router.put("/discounts", async (request, response) => {
    const body = parseWith(discountBodySchema, request.body);
    if (body.model !== null && findModel(body.model) === undefined) {
      throw apiErrors.notFound(`Unknown model: ${body.model}`);
    }
    const { effectiveAt } = await setDiscount(
      writeDependenciesOf(context),
      body,
      adminOriginOf(response.locals),
    );
    response.json({
      model: body.model,
      organizationId: body.organizationId,
      rate: formatMoney(body.rate),
      effectiveAt,
    });
  });

  router.delete("/discounts", async (request, response) => {
    // The scope is the query's: a body (the PUT's shape, say) would otherwise be ignored, and the scope left
    // out read as "any", ending the broadest rule.
    if (request.body !== undefined && Object.keys(request.body as object).length > 0) {
      throw apiErrors.validation(
        "DELETE /admin/discounts takes its scope in the query (model, organizationId), not in a body",
      );
    }
    const scope = parseWith(discountScopeQuerySchema, request.query);
    const { effectiveAt } = await removeDiscount(
      writeDependenciesOf(context),
      scope,
      adminOriginOf(response.locals),
    );
    response.json({ ...scope, rate: null, effectiveAt });
  });

  router.get("/prices/history", async (request, response) => {
    const query = parseWith(priceHistoryQuerySchema, request.query);
    // A model the catalog no longer lists (a models file changed) keeps the history its prices made.
    const models = new Set([
      ...listModels().map((model) => model.slug),
      ...(await readPricedModels(context.database)),
    ]);
    if (query.model !== undefined && !models.has(query.model)) {
      throw apiErrors.notFound(`Unknown model: ${query.model}`);
    }
    const asked = query.model === undefined ? [...models] : [query.model];
    const page = await readPriceHistory(context.store, asked, {
      limit: query.limit,
      after: changePositionOf(query.cursor),
    });
    response.json(historyPageBody(page));
  });

  router.get("/discounts/history", async (request, response) => {
    const query = parseWith(discountHistoryQuerySchema, request.query);
    const page = await readDiscountHistory(context.store, context.database, {
      limit: query.limit,
      after: changePositionOf(query.cursor),
      scopesMax: billingLimits.discountScopesMax,
    });
    response.json(historyPageBody(page));
  });
}

function changePositionOf(cursor: string | undefined): ChangePosition | undefined {
  if (cursor === undefined) return undefined;
  const position = decodeChangeCursor(cursor);
  if (position === undefined)
    throw apiErrors.validation("cursor: must be a nextCursor returned by a previous page");
  return position;
}

function historyPageBody<Change>(page: HistoryPage<Change>): { data: Change[]; nextCursor: string | null } {
  return { data: page.data, nextCursor: page.next === null ? null : encodeChangeCursor(page.next) };
}
