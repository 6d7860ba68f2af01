import type { DeclaredTable } from "../../../database/declared-schema";

/**
 * What each gateway process reports of its requests in flight (C10's last point), written every few seconds
 * in one statement for all of them: each one's output so far, the input and cached input its upstream
 * reported before the stream's end (null: not reported, or written by a release before migration 28), the
 * configured fallback answering it once one has begun to (`answering_model`; null: the model requested, or
 * written by a release before migration 30), and how long its hold is good for (`renewed_until`). The orphan
 * sweep reads it: a hold renewed in time is never settled while its gateway lives, and a request whose
 * gateway died is billed for the output its last record counted, not for none, for the input its upstream
 * reported where it did, and as the model answering it.
 *
 * Operational state beside `gateway_instances`, not a read model: it is not folded from the log and a
 * rebuild leaves it alone. What it contributes to the money is written into the ledger by the settlement
 * that uses it (the sweep's `UsageRecorded` carries the counts it used). A row outlives its hold only
 * until the sweep removes it.
 */
export const holdProgressTable: DeclaredTable = {
  kind: "table",
  name: "hold_progress",
  sql: `
    CREATE TABLE hold_progress (
      request_id text PRIMARY KEY,
      gateway_instance text NOT NULL,
      output_tokens integer NOT NULL CHECK (output_tokens >= 0),
      renewed_until timestamptz NOT NULL,
      recorded_at timestamptz NOT NULL,
      input_tokens integer CHECK (input_tokens >= 0),
      cached_input_tokens integer,
      answering_model text CHECK (answering_model <> ''),
      CONSTRAINT hold_progress_cached_input_within_input CHECK (
        cached_input_tokens IS NULL
        OR (input_tokens IS NOT NULL AND cached_input_tokens BETWEEN 0 AND input_tokens)
      )
    );
  `,
};
