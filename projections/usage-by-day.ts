import { Money } from "../src/kernel/money";
import { seoulDateOf } from "../src/kernel/seoul-calendar";
import { defineTable, type ProjectionDefinition } from "../src/ledger/projection/projection";
import { usageChargedRows } from "../src/ledger/rebuild/parsed-events";
import type { RecordedEventOf } from "../src/ledger/store/event-store";

/**
 * Charged usage summed per Seoul day × account × model × key: what the console's usage charts read, so a
 * chart over a year costs a few hundred rows, never a scan of every charge. The day is the Seoul date of
 * the request's start, the instant its price and FX rate were taken at (C7), so the chart and the charges
 * table agree on which day a charge belongs to.
 */

type Row = {
  day: string;
  account_kind: string;
  account_id: string;
  model: string;
  key_id: string;
  requests: string;
  amount_won: string;
  input_tokens: string;
  cached_tokens: string;
  output_tokens: string;
  reasoning_tokens: string;
};

export const usageByDayTable = defineTable<Row>({
  name: "projection_usage_by_day",
  columns: {
    day: "date",
    account_kind: "text",
    account_id: "text",
    model: "text",
    key_id: "text",
    requests: "bigint",
    amount_won: "numeric",
    input_tokens: "bigint",
    cached_tokens: "bigint",
    output_tokens: "bigint",
    reasoning_tokens: "bigint",
  },
  primaryKey: ["account_kind", "account_id", "day", "model", "key_id"],
});

const usageByDayColumns = Object.keys(usageByDayTable.columns).join(", ");

/** Token counts the upstream did not report (null) add nothing here; the charge keeps the null. */
function plus(total: string, count: number | null, corrected: number | null = null): string {
  return (BigInt(total) + BigInt(count ?? 0) - BigInt(corrected ?? 0)).toString();
}

/** The tokens that corrections in a group take back (a correction's charge carries its corrected counts). */
function correctedSum(count: "input" | "cached" | "output" | "reasoning"): string {
  return `coalesce(sum((correction->'correctedTokens'->>'${count}')::bigint), 0)`;
}

/** The parsed charges summed per day row, in the table's column order. */
const chargedSumsByDay = `
  SELECT (started_at AT TIME ZONE 'Asia/Seoul')::date, account_kind, account_id, model, key_id,
         count(*) FILTER (WHERE correction IS NULL), trim_scale(sum(amount_won)),
         coalesce(sum(input_tokens), 0) - ${correctedSum("input")},
         coalesce(sum(cached_tokens), 0) - ${correctedSum("cached")},
         coalesce(sum(output_tokens), 0) - ${correctedSum("output")},
         coalesce(sum(reasoning_tokens), 0) - ${correctedSum("reasoning")}
  FROM ${usageChargedRows.table}
  GROUP BY 1, 2, 3, 4, 5`;

export const usageByDayProjection: ProjectionDefinition = {
  name: "usage-by-day",
  version: 2,
  handles: new Set(["UsageCharged"]),
  tables: [usageByDayTable],
  evolve(rows, recorded) {
    const event = recorded as RecordedEventOf<"UsageCharged">;
    const key = {
      day: seoulDateOf(new Date(event.data.startedAt)),
      account_kind: event.data.account.kind,
      account_id: event.data.account.id,
      model: event.data.model,
      key_id: event.data.keyId,
    };
    const current = rows.get(usageByDayTable, key) ?? {
      ...key,
      requests: "0",
      amount_won: "0",
      input_tokens: "0",
      cached_tokens: "0",
      output_tokens: "0",
      reasoning_tokens: "0",
    };
    const tokens = event.data.breakdown.tokens;
    // A correction's charge moves the day by the difference: its amount is one, its tokens are made one.
    const corrected = event.data.correction?.correctedTokens;
    rows.put(usageByDayTable, {
      ...current,
      requests: plus(current.requests, corrected ? 0 : 1),
      amount_won: new Money(current.amount_won).plus(event.data.amountWon).toFixed(),
      input_tokens: plus(current.input_tokens, tokens.input, corrected?.input),
      cached_tokens: plus(current.cached_tokens, tokens.cached, corrected?.cached),
      output_tokens: plus(current.output_tokens, tokens.output, corrected?.output),
      reasoning_tokens: plus(current.reasoning_tokens, tokens.reasoning, corrected?.reasoning),
    });
  },
  sqlFold: {
    // Each chunk's charges summed per row and appended (an upsert into a keyed shadow cost twice as much),
    // then the rows of a key that several chunks summed merged into one.
    statements: (into) => [`INSERT INTO ${into(usageByDayTable)} (${usageByDayColumns}) ${chargedSumsByDay}`],
    finish: (into) => [
      `CREATE TEMPORARY TABLE rebuild_usage_by_day_merged ON COMMIT DROP AS
       SELECT day, account_kind, account_id, model, key_id, sum(requests)::bigint AS requests,
              trim_scale(sum(amount_won)) AS amount_won, sum(input_tokens)::bigint AS input_tokens,
              sum(cached_tokens)::bigint AS cached_tokens, sum(output_tokens)::bigint AS output_tokens,
              sum(reasoning_tokens)::bigint AS reasoning_tokens
       FROM ${into(usageByDayTable)}
       GROUP BY day, account_kind, account_id, model, key_id HAVING count(*) > 1`,
      `DELETE FROM ${into(usageByDayTable)} stored USING rebuild_usage_by_day_merged merged
       WHERE (stored.day, stored.account_kind, stored.account_id, stored.model, stored.key_id)
           = (merged.day, merged.account_kind, merged.account_id, merged.model, merged.key_id)`,
      `INSERT INTO ${into(usageByDayTable)} (${usageByDayColumns}) SELECT ${usageByDayColumns}
       FROM rebuild_usage_by_day_merged`,
      "DROP TABLE rebuild_usage_by_day_merged",
    ],
    // A live batch adds its sums to the day's row.
    batchStatements: [
      `INSERT INTO ${usageByDayTable.name} AS stored (${usageByDayColumns}) ${chargedSumsByDay}
       ON CONFLICT (account_kind, account_id, day, model, key_id) DO UPDATE SET
         requests = stored.requests + excluded.requests,
         amount_won = trim_scale(stored.amount_won + excluded.amount_won),
         input_tokens = stored.input_tokens + excluded.input_tokens,
         cached_tokens = stored.cached_tokens + excluded.cached_tokens,
         output_tokens = stored.output_tokens + excluded.output_tokens,
         reasoning_tokens = stored.reasoning_tokens + excluded.reasoning_tokens`,
    ],
  },
};
