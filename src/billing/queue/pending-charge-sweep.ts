import type pg from "pg";
import { pendingChargesTable } from "../../../projections/balances";

/**
 * The sweeper's query: usage recorded but still uncharged after `ageMs` — its job was lost (the queue was
 * down when the gateway enqueued it) or failed for good. Each is enqueued again; duplicates of jobs still
 * waiting are ignored by the queue, and a charge already appended makes the job a no-op.
 */

export interface PendingChargeSweepOptions {
  now: Date;
  ageMs: number;
  pageSize: number;
  pagesMax: number;
}

export async function sweepPendingCharges(
  database: Pick<pg.Pool, "query">,
  enqueue: (requestIds: readonly string[]) => Promise<void>,
  options: PendingChargeSweepOptions,
): Promise<{ enqueuedCount: number }> {
  const recordedBefore = new Date(options.now.getTime() - options.ageMs).toISOString();
  let after: { recordedAt: string; requestId: string } | undefined;
  let enqueuedCount = 0;
  for (let page = 0; page < options.pagesMax; page += 1) {
    const result = await database.query<{ request_id: string; recorded_at: string }>(
      `SELECT request_id, to_char(recorded_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS recorded_at
       FROM ${pendingChargesTable.name}
       WHERE recorded_at < $1
         AND ($2::timestamptz IS NULL OR (recorded_at, request_id) > ($2::timestamptz, $3::text))
       ORDER BY recorded_at, request_id
       LIMIT $4`,
      [recordedBefore, after?.recordedAt ?? null, after?.requestId ?? null, options.pageSize],
    );
    if (result.rows.length === 0) break;
    await enqueue(result.rows.map((row) => row.request_id));
    enqueuedCount += result.rows.length;
    const last = result.rows[result.rows.length - 1]!;
    after = { recordedAt: last.recorded_at, requestId: last.request_id };
    if (result.rows.length < options.pageSize) break;
  }
  return { enqueuedCount };
}
