import { Router as createRouter, type Router } from "express";
import type pg from "pg";
import { pricesTable } from "../../../projections/prices";
import { type DiscountInForce, readDiscountsInForce } from "../../billing/read-models/admin-read-model";
import { canonicalMoney } from "../../kernel/money";
import { listModels } from "../../providers/catalog";

/**
 * Read APIs the web console needs and the admin API (C6) does not have yet, under `/admin/console/…` so they
 * never collide with the general admin read APIs being added beside them; once those exist, the console
 * switches to them and this file goes.
 *
 * - `GET /admin/console/prices` → `{ data: [ { model, inputUsdPer1M, outputUsdPer1M, cachedInputUsdPer1M,
 *   effectiveAt } ] }`, the price in force per catalog model.
 * - `GET /admin/console/discounts` → `{ data: [ { model, organizationId, rate, effectiveAt } ] }`, the rule in
 *   force per scope (model or any × organization or any).
 */

export interface ConsolePriceRow {
  model: string;
  family: string;
  inputUsdPer1M: string;
  outputUsdPer1M: string;
  cachedInputUsdPer1M: string;
  effectiveAt: string | null;
}

/** The rule in force per scope, as `GET /admin/discounts` reads it. */
export type ConsoleDiscountRow = DiscountInForce;

export function createConsoleReadRouter(database: Pick<pg.Pool, "query">): Router {
  const router = createRouter();
  router.get("/console/prices", async (_request, response) => {
    response.json({ data: await readConsolePrices(database) });
  });
  router.get("/console/discounts", async (_request, response) => {
    response.json({ data: await readDiscountsInForce(database) });
  });
  return router;
}

/** Every catalog model, at the latest recorded price or, when none was recorded, the catalog's own. */
async function readConsolePrices(database: Pick<pg.Pool, "query">): Promise<ConsolePriceRow[]> {
  const result = await database.query<{
    model: string;
    input_usd_per_million_tokens: string;
    output_usd_per_million_tokens: string;
    cached_input_usd_per_million_tokens: string;
    effective_at: string;
  }>(
    `SELECT DISTINCT ON (model) model, input_usd_per_million_tokens, output_usd_per_million_tokens,
            cached_input_usd_per_million_tokens, effective_at
       FROM ${pricesTable.name}
      ORDER BY model, effective_at DESC, stream_version DESC NULLS LAST, event_id DESC`,
  );
  const byModel = new Map(result.rows.map((row) => [row.model, row]));
  return listModels().map((model) => {
    const row = byModel.get(model.slug);
    return {
      model: model.slug,
      family: model.family,
      inputUsdPer1M: canonicalMoney(row?.input_usd_per_million_tokens ?? model.inputUsdPerMillionTokens),
      outputUsdPer1M: canonicalMoney(row?.output_usd_per_million_tokens ?? model.outputUsdPerMillionTokens),
      cachedInputUsdPer1M: canonicalMoney(
        row?.cached_input_usd_per_million_tokens ?? model.cachedInputUsdPerMillionTokens,
      ),
      effectiveAt: row ? new Date(row.effective_at).toISOString() : null,
    };
  });
}
