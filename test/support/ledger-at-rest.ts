import type pg from "pg";

/**
 * Waits until every request served so far is in the log and charged: no hold row left to log, and each usage
 * stream holding as many charges as usages. The log writer and the reconciler append after the answer (C10),
 * so a test that reads the whole log waits for this first, or an event lands between its two reads.
 */
export async function waitForLedgerAtRest(
  database: Pick<pg.Pool, "query">,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { rows } = await database.query<{ holds: number; uncharged: number }>(
      `SELECT (SELECT count(*) FROM request_holds)::int AS holds,
              (SELECT count(*) FROM (
                 SELECT stream_id FROM ledger_events WHERE type IN ('UsageRecorded', 'UsageCharged')
                 GROUP BY stream_id
                 HAVING count(*) FILTER (WHERE type = 'UsageRecorded')
                      <> count(*) FILTER (WHERE type = 'UsageCharged')) AS streams)::int AS uncharged`,
    );
    const { holds, uncharged } = rows[0]!;
    if (holds === 0 && uncharged === 0) return;
    if (Date.now() > deadline)
      throw new Error(
        `the ledger is not at rest: ${holds} hold rows, ${uncharged} usages without their charge`,
      );
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
