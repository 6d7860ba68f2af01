import type { DeclaredTable } from "../../../database/declared-schema";

/**
 * Each key's latest `ApiKeyLimitsSet`, kept by the append trigger: a spend limit per Asia/Seoul calendar
 * month, a total spend limit (won) and a rate limit (requests per minute); null is no limit.
 * `ledger_authorize_usage` enforces them (../holds/ledger-authorize-usage.ts). `allowed_models` (migration
 * 13): the slugs and family words the key may call, null for every model; the gateway checks it before the
 * hold (src/keys/allowed-models.ts), reading it with the key's admission record.
 */
export const keyLimitsTable: DeclaredTable = {
  kind: "table",
  name: "key_limits",
  sql: `
    CREATE TABLE key_limits (
      key_id uuid PRIMARY KEY,
      monthly_spend_limit_won numeric,
      total_spend_limit_won numeric,
      rate_limit_requests_per_minute integer,
      allowed_models text[]
    );
  `,
};
