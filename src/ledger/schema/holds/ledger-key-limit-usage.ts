import type { DeclaredFunction } from "../../../database/declared-schema";

/**
 * What a key has used against each limit it has (../inline-funds/key-limits.ts), as a hold decides on it
 * (ledger-authorize-usage.ts): its held + pending + charged this Asia/Seoul month and in total, and its
 * requests this minute (holds granted) — each the log's folds plus the key's hold rows not yet logged, and
 * for spend what the orphan sweep keeps back of the key's swept holds (swept-hold-reserves.ts). Null for a
 * limit not asked for, which is not read. An open hold counts at its estimate: the key's hold is never cut
 * (ledger-authorize-usage.ts says why), even where its account's was cut to the room left.
 *
 * A function of its own, called only for a key with a spend or rate limit, so that a hold for any other key
 * (most keys) neither runs nor even sets up these lookups: they are most of the hold statement's plan, and a
 * generic plan initialises every sub-plan on each call whether it runs or not. PL/pgSQL, never inlined, for
 * the same reason. The hold locks the key's account first, so what this reads cannot change under the
 * decision.
 */
export const ledgerKeyLimitUsageFunction: DeclaredFunction = {
  kind: "function",
  name: "ledger_key_limit_usage",
  sql: `
    CREATE OR REPLACE FUNCTION ledger_key_limit_usage(
      of_key uuid, of_account_kind text, of_account_id text, of_month text,
      monthly_limited boolean, total_limited boolean, rate_limited boolean,
      OUT month_spent numeric, OUT total_spent numeric, OUT minute_requests bigint)
    LANGUAGE plpgsql STABLE AS $$
    BEGIN
      IF monthly_limited THEN
        month_spent :=
          coalesce((SELECT sum(spend.held_won + spend.pending_won + spend.charged_won) FROM key_spend_settled spend
            WHERE spend.key_id = of_key AND spend.month = of_month), 0)
          + coalesce((SELECT sum(spend.authorized_won) FROM key_spend_authorized spend
            WHERE spend.key_id = of_key AND spend.month = of_month), 0)
          + coalesce((SELECT sum(coalesce(holds.pending_won, holds.estimated_won)) FROM request_holds holds
            WHERE holds.account_kind = of_account_kind
              AND holds.account_id = of_account_id
              AND holds.key_id = of_key AND holds.month = of_month), 0)
          + coalesce((SELECT sum(reserves.reserved_won) FROM swept_hold_reserves reserves
            WHERE reserves.account_kind = of_account_kind AND reserves.account_id = of_account_id
              AND reserves.key_id = of_key AND reserves.month = of_month AND reserves.reserved_until > now()), 0);
      END IF;
      IF total_limited THEN
        total_spent :=
          coalesce((SELECT sum(spend.held_won + spend.pending_won + spend.charged_won) FROM key_spend_settled spend
            WHERE spend.key_id = of_key), 0)
          + coalesce((SELECT sum(spend.authorized_won) FROM key_spend_authorized spend
            WHERE spend.key_id = of_key), 0)
          + coalesce((SELECT sum(coalesce(holds.pending_won, holds.estimated_won)) FROM request_holds holds
            WHERE holds.account_kind = of_account_kind
              AND holds.account_id = of_account_id AND holds.key_id = of_key), 0)
          + coalesce((SELECT sum(reserves.reserved_won) FROM swept_hold_reserves reserves
            WHERE reserves.account_kind = of_account_kind AND reserves.account_id = of_account_id
              AND reserves.key_id = of_key AND reserves.reserved_until > now()), 0);
      END IF;
      IF rate_limited THEN
        minute_requests :=
          coalesce((SELECT requests_window.requests FROM key_request_windows requests_window
            WHERE requests_window.key_id = of_key AND requests_window.window_start = date_trunc('minute', now())), 0)
          + (SELECT count(*) FROM request_holds holds
            WHERE holds.account_kind = of_account_kind
              AND holds.account_id = of_account_id
              AND holds.key_id = of_key AND holds.placed_at >= date_trunc('minute', now()));
      END IF;
    END $$;
  `,
};
