import type pg from "pg";
import { balancesTable, pendingChargesTable } from "../../../projections/balances";
import { discountsTable } from "../../../projections/discounts";
import { keyListsTable } from "../../../projections/key-lists";
import { pricesTable } from "../../../projections/prices";
import { canonicalMoney } from "../../kernel/money";
import { type ApiKeyLimitsView, readKeyLimits } from "../../keys/api-key-limits";
import type { AccountKind, AccountReference } from "../../ledger/events";

/** NUMERIC text keeps its scale ("0.40"); the API answers the way the admin writes answer ("0.4"). */
const normalised = canonicalMoney;

/**
 * What an admin (or a console) reads: the prices and discounts in force, accounts and their keys. Plain
 * reads of the projections, each bounded by the caller's page size.
 */

type Database = Pick<pg.Pool, "query">;

export interface PriceInForce {
  model: string;
  inputUsdPer1M: string;
  outputUsdPer1M: string;
  cachedInputUsdPer1M: string;
  effectiveAt: string;
}

/** The latest price of every model that has one, by slug. */
export async function readPricesInForce(database: Database): Promise<PriceInForce[]> {
  const result = await database.query<{
    model: string;
    input: string;
    output: string;
    cached_input: string;
    effective_at: string;
  }>(
    `SELECT DISTINCT ON (model) model, input_usd_per_million_tokens::text AS input,
            output_usd_per_million_tokens::text AS output,
            cached_input_usd_per_million_tokens::text AS cached_input,
            to_char(effective_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS effective_at
     FROM ${pricesTable.name}
     WHERE effective_at <= now()
     ORDER BY model, effective_at DESC, stream_version DESC NULLS LAST, event_id DESC`,
  );
  return result.rows.map((row) => ({
    model: row.model,
    inputUsdPer1M: normalised(row.input),
    outputUsdPer1M: normalised(row.output),
    cachedInputUsdPer1M: normalised(row.cached_input),
    effectiveAt: row.effective_at,
  }));
}

export interface DiscountInForce {
  model: string | null;
  organizationId: string | null;
  rate: string;
  effectiveAt: string;
}

/** The latest rule of every (model or any, organization or any) scope; a rate of 0 is a rule too, a removed one none. */
export async function readDiscountsInForce(database: Database): Promise<DiscountInForce[]> {
  const result = await database.query<{
    model: string | null;
    organization_id: string | null;
    rate: string;
    effective_at: string;
  }>(
    `SELECT * FROM (
       SELECT DISTINCT ON (model, organization_id) model, organization_id, rate::text AS rate,
              to_char(effective_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS effective_at
       FROM ${discountsTable.name}
       WHERE effective_at <= now()
       ORDER BY model NULLS FIRST, organization_id NULLS FIRST, effective_at DESC, stream_version DESC NULLS LAST, event_id DESC
     ) latest
     WHERE latest.rate IS NOT NULL`,
  );
  return result.rows.map((row) => ({
    model: row.model,
    organizationId: row.organization_id,
    rate: normalised(row.rate),
    effectiveAt: row.effective_at,
  }));
}

export interface AccountSummary {
  kind: AccountKind;
  id: string;
  /**
   * One row of the ledger's inline funds (C10), as `GET /llm/balance` reads it, so that `balance − pending −
   * held` is what the account has available: held by requests in flight, recorded and not yet charged.
   */
  balanceWon: string;
  heldWon: string;
  pendingWon: string;
  /** The totals the billing history lists (the balances projection): a charge reaches them after the balance. */
  toppedUpWon: string;
  chargedWon: string;
  /** Usages recorded and not charged yet, as the balances projection has them. */
  pendingCharges: number;
}

/**
 * Accounts whose id contains `search` (case-insensitive; all when absent), of one kind or both, in
 * (kind, id) order after `after`, at most `limit`. The accounts are those of the balances projection; each
 * one's money in flight and its balance are one row of the funds, which the projection trails.
 */
export async function searchAccounts(
  database: Database,
  options: { search?: string; kind?: AccountKind; after?: AccountReference; limit: number },
): Promise<{ data: AccountSummary[]; next: AccountReference | null }> {
  const pattern = options.search === undefined ? null : `%${options.search.replace(/[\\%_]/g, "\\$&")}%`;
  const result = await database.query<{
    account_kind: AccountKind;
    account_id: string;
    topped_up_won: string;
    charged_won: string;
    pending_charges: string;
    // Null without a funds row: an account the log has moved no money of yet has ₩0 in each.
    balance_won: string | null;
    held_won: string | null;
    pending_won: string | null;
  }>(
    `SELECT b.account_kind, b.account_id, b.topped_up_won::text AS topped_up_won,
            b.charged_won::text AS charged_won,
            (SELECT count(*) FROM ${pendingChargesTable.name} p
              WHERE p.account_kind = b.account_kind AND p.account_id = b.account_id)::text AS pending_charges,
            f.balance_won::text AS balance_won, f.held_won::text AS held_won, f.pending_won::text AS pending_won
     FROM ${balancesTable.name} b
     LEFT JOIN account_funds f ON f.account_kind = b.account_kind AND f.account_id = b.account_id
     WHERE ($1::text IS NULL OR b.account_id ILIKE $1)
       AND ($2::text IS NULL OR b.account_kind = $2)
       AND ($3::text IS NULL OR (b.account_kind, b.account_id) > ($3::text, $4::text))
     ORDER BY b.account_kind, b.account_id
     LIMIT $5`,
    [
      pattern,
      options.kind ?? null,
      options.after?.kind ?? null,
      options.after?.id ?? null,
      options.limit + 1,
    ],
  );
  const rows = result.rows.slice(0, options.limit);
  const last = rows[rows.length - 1];
  return {
    data: rows.map((row) => ({
      kind: row.account_kind,
      id: row.account_id,
      balanceWon: row.balance_won === null ? "0" : normalised(row.balance_won),
      heldWon: row.held_won === null ? "0" : normalised(row.held_won),
      pendingWon: row.pending_won === null ? "0" : normalised(row.pending_won),
      toppedUpWon: normalised(row.topped_up_won),
      chargedWon: normalised(row.charged_won),
      pendingCharges: Number(row.pending_charges),
    })),
    next:
      result.rows.length > options.limit && last ? { kind: last.account_kind, id: last.account_id } : null,
  };
}

export interface AccountKey {
  uuid: string;
  name: string;
  description: string;
  status: number;
  keyPreview: string;
  createdAt: string;
  limits: ApiKeyLimitsView["limits"];
  spend: ApiKeyLimitsView["spend"];
}

/** Where a key stands in an account's list: its issue instant (to the microsecond), then its id. */
export interface AccountKeyPosition {
  createdAt: string;
  keyId: string;
}

/**
 * The keys an account owns (deleted keys are not in the projection), newest first (ties by id), at most
 * `limit` after `after`, and the position to read on from when more are left.
 */
export async function readAccountKeys(
  database: Database,
  account: AccountReference,
  page: { limit: number; after?: AccountKeyPosition | undefined },
): Promise<{ data: AccountKey[]; next: AccountKeyPosition | null }> {
  const result = await database.query<{
    key_id: string;
    name: string;
    description: string;
    status: number;
    key_preview: string;
    created_at: string;
    created_at_exact: string;
  }>(
    `SELECT key_id, name, description, status, key_preview,
            to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at,
            to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS created_at_exact
     FROM ${keyListsTable.name}
     WHERE owner_kind = $1 AND owner_id = $2
       AND ($3::timestamptz IS NULL OR created_at < $3 OR (created_at = $3 AND key_id > $4::text))
     ORDER BY created_at DESC, key_id
     LIMIT $5`,
    // One more than the page: whether there is a next page, without a count.
    [account.kind, account.id, page.after?.createdAt ?? null, page.after?.keyId ?? null, page.limit + 1],
  );
  const rows = result.rows.slice(0, page.limit);
  const limits = await readKeyLimits(
    database,
    rows.map((row) => row.key_id),
    new Date(),
  );
  const last = rows.at(-1);
  return {
    data: rows.map((row) => ({
      uuid: row.key_id,
      name: row.name,
      description: row.description,
      status: row.status,
      keyPreview: row.key_preview,
      createdAt: row.created_at,
      ...limits.get(row.key_id)!,
    })),
    next:
      result.rows.length > page.limit && last
        ? { createdAt: last.created_at_exact, keyId: last.key_id }
        : null,
  };
}
