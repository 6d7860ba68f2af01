import { Router as createRouter, type Router } from "express";
import type pg from "pg";
import { balancesTable, pendingChargesTable } from "../../../projections/balances";
import { pricesTable } from "../../../projections/prices";
import { type DiscountInForce, readDiscountsInForce } from "../../billing/read-models/admin-read-model";
import { readLimits } from "../../kernel/limits";
import { canonicalMoney } from "../../kernel/money";
import { listModels } from "../../providers/catalog";

/**
 * Read APIs the web console needs and the admin API (C6) does not have yet, under `/admin/console/…` so they
 * never collide with the general admin read APIs being added beside them; once those exist, the console
 * switches to them and this file goes.
 *
 * - `GET /admin/console/accounts` → `{ data: [ { kind, id, balanceWon, pendingRequests, heldWon, pendingWon } ] }`, every account
 *   that ever had a top-up or a charge (bounded by `readLimits.consoleAccountsRowsMax`).
 * - `GET /admin/console/prices` → `{ data: [ { model, inputUsdPer1M, outputUsdPer1M, cachedInputUsdPer1M,
 *   effectiveAt } ] }`, the price in force per catalog model.
 * - `GET /admin/console/discounts` → `{ data: [ { model, organizationId, rate, effectiveAt } ] }`, the rule in
 *   force per scope (model or any × organization or any).
 */

export interface ConsoleAccountRow {
  kind: "user" | "organization";
  id: string;
  balanceWon: string;
  pendingRequests: number;
  /** From the ledger's inline funds (C10): held by requests in flight, recorded and not yet charged. */
  heldWon: string;
  pendingWon: string;
}

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
  router.get("/console/accounts", async (_request, response) => {
    response.json({ data: await readConsoleAccounts(database) });
  });
  router.get("/console/prices", async (_request, response) => {
    response.json({ data: await readConsolePrices(database) });
  });
  router.get("/console/discounts", async (_request, response) => {
    response.json({ data: await readDiscountsInForce(database) });
  });
  return router;
}

async function readConsoleAccounts(database: Pick<pg.Pool, "query">): Promise<ConsoleAccountRow[]> {
  const result = await database.query<{
    account_kind: "user" | "organization";
    account_id: string;
    balance_won: string;
    pending_requests: string;
    held_won: string | null;
    pending_won: string | null;
  }>(
    `SELECT b.account_kind, b.account_id, b.balance_won,
            (SELECT count(*) FROM ${pendingChargesTable.name} p
              WHERE p.account_kind = b.account_kind AND p.account_id = b.account_id)::text AS pending_requests,
            trim_scale(f.held_won)::text AS held_won, trim_scale(f.pending_won)::text AS pending_won
       FROM ${balancesTable.name} b
       LEFT JOIN account_funds f ON f.account_kind = b.account_kind AND f.account_id = b.account_id
      ORDER BY b.account_kind, b.account_id
      LIMIT ${readLimits.consoleAccountsRowsMax}`,
  );
  return result.rows.map((row) => ({
    kind: row.account_kind,
    id: row.account_id,
    balanceWon: canonicalMoney(row.balance_won),
    pendingRequests: Number(row.pending_requests),
    heldWon: row.held_won ?? "0",
    pendingWon: row.pending_won ?? "0",
  }));
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
